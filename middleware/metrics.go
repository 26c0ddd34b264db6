package middleware

import (
	"time"

	"github.com/gin-gonic/gin"
)

// HTTPObserver records finished HTTP requests (services/metrics implements it).
type HTTPObserver interface {
	HTTPRequest(route, method string, status int, seconds float64)
}

// HTTPMetrics observes every request by its route pattern (not the raw path,
// which would explode label cardinality); unmatched paths count as "unmatched".
func HTTPMetrics(o HTTPObserver) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		o.HTTPRequest(route, c.Request.Method, c.Writer.Status(), time.Since(start).Seconds())
	}
}
