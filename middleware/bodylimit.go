package middleware

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/apierr"
)

// BodyLimit refuses bodies over max bytes with 413: at once when
// Content-Length says so, and while reading (http.MaxBytesReader) for
// chunked or lying clients; readers see *http.MaxBytesError.
func BodyLimit(max int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > max {
			abort(c, TooLarge(max))
			return
		}
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, max)
		}
		c.Next()
	}
}

// TooLarge is the 413 of a body over max bytes.
func TooLarge(max int64) *apierr.Error {
	return apierr.InvalidRequestStatus(http.StatusRequestEntityTooLarge,
		"The request body is larger than the server accepts.", map[string]any{"max_bytes": max})
}
