package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/gateway"
)

// Typed context keys: no string collisions with other middleware.
type ctxKey int

const (
	keyCtxKey ctxKey = iota
	callCtxKey
)

// Key returns the authenticated virtual key, nil before KeyAuth ran.
func Key(c *gin.Context) *catalog.Key {
	if v, ok := c.Get(keyCtxKey); ok {
		return v.(*catalog.Key)
	}
	return nil
}

// KeyID is the authenticated key's id, "" when none (access log).
func KeyID(c *gin.Context) string {
	if k := Key(c); k != nil {
		return k.ID
	}
	return ""
}

// Call returns the model call of this request, nil outside model endpoints.
func Call(c *gin.Context) *gateway.Call {
	if v, ok := c.Get(callCtxKey); ok {
		return v.(*gateway.Call)
	}
	return nil
}
