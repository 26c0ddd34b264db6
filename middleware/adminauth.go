package middleware

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/apierr"
)

// AdminAuth admits requests carrying the master key (Authorization: Bearer or
// X-API-Key). A virtual key is not an admin credential. With no master key
// configured every admin call is refused, with a message saying how to set one.
func AdminAuth(masterKey string) gin.HandlerFunc {
	// Comparing digests in constant time hides both the key and its length.
	want := sha256.Sum256([]byte(masterKey))
	return func(c *gin.Context) {
		if masterKey == "" {
			abort(c, apierr.Authentication("The admin API is disabled because no master key is configured: set admin.master_key in the config file or the GATEWAY_ADMIN_MASTER_KEY environment variable."))
			return
		}
		presented := PresentedKey(c)
		if presented == "" {
			abort(c, apierr.Authentication("Missing admin credential: send 'Authorization: Bearer <master key>' or 'X-API-Key: <master key>'."))
			return
		}
		got := sha256.Sum256([]byte(presented))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			abort(c, apierr.Authentication("Invalid admin credential."))
			return
		}
		c.Next()
	}
}
