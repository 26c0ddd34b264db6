// Package middleware holds the Gin middleware of the gateway, one file per
// concern: request id, panic recovery, access log, body limit, admin and
// virtual-key authentication, and the /v1 admission chain.
package middleware

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
)

// HeaderRequestID carries the request id both ways.
const HeaderRequestID = "X-Request-ID"

const maxRequestIDLen = 128

// Typed context keys of this file's concerns; struct types cannot collide
// with any other package's keys.
type (
	requestIDCtxKey struct{}
	loggerCtxKey    struct{}
)

// RequestIDs accepts a sane client-supplied X-Request-ID (≤ 128 characters
// of [A-Za-z0-9-_.]) so a caller can correlate its logs with ours, or
// generates one; either way it is set on the response and stored for
// RequestID.
func RequestIDs() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(HeaderRequestID)
		if !validRequestID(id) {
			id = newRequestID()
		}
		c.Set(requestIDCtxKey{}, id)
		c.Header(HeaderRequestID, id)
		c.Next()
	}
}

// RequestID returns the id of the request ("" before RequestIDs ran).
func RequestID(c *gin.Context) string {
	if v, ok := c.Get(requestIDCtxKey{}); ok {
		return v.(string)
	}
	return ""
}

func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '-', b == '_', b == '.':
		default:
			return false
		}
	}
	return true
}

// newRequestID is 16 random bytes in hex (collision-free in practice, no
// coordination between instances).
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "req_" + hex.EncodeToString(b[:])
}

// Logger returns the request's logger (with its request_id field), set by
// AccessLog; a no-op logger before that.
func Logger(c *gin.Context) *zap.Logger {
	if v, ok := c.Get(loggerCtxKey{}); ok {
		return v.(*zap.Logger)
	}
	return zap.NewNop()
}
