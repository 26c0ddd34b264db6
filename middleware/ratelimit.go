package middleware

import (
	"context"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/limits"
)

// RateLimit reserves one request and the estimated tokens against the key's
// RPM/TPM limits before the call, and corrects the tokens with the real usage
// afterwards (exactly once). X-RateLimit-* headers describe the RPM limit.
func RateLimit(l limits.Limiter) gin.HandlerFunc {
	return func(c *gin.Context) {
		call := Call(c)
		key := call.Key
		if derr, ok := c.Get(decodeErrKey); ok {
			// The request was refused before admission: it is not counted,
			// but the answer still carries the key's RPM headers.
			if key.RPMLimit > 0 {
				peekHeaders(c, l, call.RequestID, key)
			}
			abort(c, derr.(error))
			return
		}
		if key.RPMLimit <= 0 && key.TPMLimit <= 0 {
			c.Next()
			return
		}
		rule := limits.Rule{Scope: limits.ScopeKey, ID: key.ID, RPM: key.RPMLimit, TPM: key.TPMLimit}
		res, statuses, denial, err := l.Reserve(c.Request.Context(), call.RequestID, []limits.Rule{rule}, call.EstimatedTokens)
		if err != nil {
			abort(c, err)
			return
		}
		if denial != nil {
			abort(c, keyRateLimit(c, key.RPMLimit, denial))
			return
		}
		if key.RPMLimit > 0 && len(statuses) > 0 {
			setRateLimitHeaders(c, statuses[0].Limit, statuses[0].Remaining, statuses[0].ResetAt)
		}
		c.Next()
		tokens := int64(0)
		if call.Attempts > 0 {
			tokens = int64(call.Usage.TotalTokens())
		}
		_ = l.Settle(context.WithoutCancel(c.Request.Context()), res, tokens)
	}
}

func keyRateLimit(c *gin.Context, rpm int64, d *limits.Denial) *apierr.Error {
	if rpm > 0 {
		reset := d.ResetAt
		if d.LimitType != "rpm" {
			reset = time.Now().Add(time.Minute)
		}
		setRateLimitHeaders(c, rpm, 0, reset)
	}
	secs := int((d.RetryAfter + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	msg := "Rate limit exceeded: this key allows " + strconv.FormatInt(d.Limit, 10) + " "
	if d.LimitType == "tpm" {
		msg += "tokens per minute."
	} else {
		msg += "requests per minute."
	}
	return apierr.RateLimit(msg, map[string]any{
		"limit": d.Limit, "remaining": 0, "reset_at": d.ResetAt.UTC().Format(time.RFC3339),
		"scope": "key", "limit_type": d.LimitType,
	}).WithHeader("Retry-After", strconv.Itoa(secs))
}

func setRateLimitHeaders(c *gin.Context, limit, remaining int64, reset time.Time) {
	h := c.Writer.Header()
	h.Set("X-RateLimit-Limit", strconv.FormatInt(limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
}

// decodeErrKey holds an error Decode found; RateLimit renders it once the
// RPM headers are set, so refused requests carry them too.
const decodeErrKey = "gateway.decodeErr"

// deferAbort hands err to RateLimit, the next step, instead of rendering it
// at once.
func deferAbort(c *gin.Context, err error) {
	c.Set(decodeErrKey, err)
	c.Next()
	if !c.IsAborted() {
		abort(c, err) // no RateLimit after Decode in this chain
	}
}

// peekHeaders sets X-RateLimit-* without counting the request: it reserves
// one request (no tokens) to read the window, then releases it.
func peekHeaders(c *gin.Context, l limits.Limiter, requestID string, key *catalog.Key) {
	ctx := context.WithoutCancel(c.Request.Context())
	rule := limits.Rule{Scope: limits.ScopeKey, ID: key.ID, RPM: key.RPMLimit}
	res, statuses, denial, err := l.Reserve(ctx, requestID, []limits.Rule{rule}, 0)
	switch {
	case err != nil:
	case denial != nil:
		setRateLimitHeaders(c, key.RPMLimit, 0, denial.ResetAt)
	case len(statuses) > 0:
		_ = l.Release(ctx, res)
		setRateLimitHeaders(c, statuses[0].Limit, min(statuses[0].Remaining+1, statuses[0].Limit), statuses[0].ResetAt)
	}
}
