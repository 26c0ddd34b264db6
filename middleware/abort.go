package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/apierr"
)

// abort renders err in the gateway envelope, records it on the model call
// and stops the chain.
func abort(c *gin.Context, err error) {
	e := apierr.From(err)
	if call := Call(c); call != nil && call.Status == 0 {
		call.Status, call.ErrorType = e.Status, string(e.Type)
	}
	for k, v := range e.Headers {
		c.Header(k, v)
	}
	c.AbortWithStatusJSON(e.Status, e.Body())
}
