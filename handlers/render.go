// Package handlers holds the thin HTTP handlers of every surface: they bind
// the request, call a service and render its result or error. The gateway
// envelope is rendered by RenderError; the item service has its own renderer.
package handlers

import (
	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/llmgw/gateway/middleware"
	"github.com/llmgw/gateway/services/apierr"
)

// Version is the service version reported by /health.
const Version = "1.0.0"

// RenderError writes err in the gateway envelope
// {"detail":{"error":{"type","message","details"}}}. Anything that is not an
// *apierr.Error is a 500 internal_error; 5xx are logged with the request id.
func RenderError(c *gin.Context, err error) {
	e := apierr.From(err)
	if e.Status >= 500 {
		middleware.Logger(c).Error("request failed",
			zap.Int("status", e.Status), zap.String("type", string(e.Type)), zap.Error(err))
	}
	for k, v := range e.Headers {
		c.Header(k, v)
	}
	c.AbortWithStatusJSON(e.Status, e.Body())
}

// respond renders a service result: v with status, or the error.
func respond[T any](c *gin.Context, status int, v T, err error) {
	if err != nil {
		RenderError(c, err)
		return
	}
	c.JSON(status, v)
}
