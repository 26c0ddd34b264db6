package middleware

import (
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/secret"
)

// PresentedKey reads a credential from `Authorization: Bearer` or `X-API-Key`.
func PresentedKey(c *gin.Context) string {
	if h := c.GetHeader("Authorization"); h != "" {
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			return strings.TrimSpace(h[7:])
		}
	}
	return strings.TrimSpace(c.GetHeader("X-API-Key"))
}

// KeyAuth authenticates a virtual key against the in-memory catalog: no
// database read on the request path. 401 for a missing or unknown key, 403 for
// a disabled or expired one.
func KeyAuth(cat *catalog.Catalog, now func() time.Time) gin.HandlerFunc {
	return func(c *gin.Context) {
		presented := PresentedKey(c)
		if presented == "" {
			abort(c, apierr.Authentication("Missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'."))
			return
		}
		key, ok := cat.Current().KeyByHash(secret.Hash(presented))
		switch {
		case !ok:
			abort(c, apierr.Authentication("Invalid API key."))
			return
		case !key.Enabled:
			abort(c, apierr.Permission("This API key is disabled."))
			return
		case key.Expired(now()):
			abort(c, apierr.Permission("This API key has expired."))
			return
		}
		c.Set(keyCtxKey, key)
		c.Next()
	}
}
