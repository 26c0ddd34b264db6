package middleware

import (
	"errors"
	"net/http"
	"runtime/debug"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/llmgw/gateway/services/apierr"
)

// Recover turns a panic into a 500 internal_error envelope (when nothing has
// been written yet) and logs it with the request id and the stack.
func Recover(log *zap.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p) // the deliberate "abort this response" of net/http
			}
			log.Error("panic while serving a request",
				zap.String("request_id", RequestID(c)),
				zap.String("method", c.Request.Method),
				zap.String("path", c.Request.URL.Path),
				zap.Any("panic", p),
				zap.ByteString("stack", debug.Stack()))
			if c.Writer.Written() {
				c.Abort() // a stream already started: nothing sane can be added
				return
			}
			abort(c, apierr.Internal("The server hit an unexpected error."))
		}()
		c.Next()
	}
}
