package middleware

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// AccessLog writes one line per request and gives handlers a logger that
// carries the request id (Logger). It logs the key id, never the key.
func AccessLog(log *zap.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		reqLog := log.With(zap.String("request_id", RequestID(c)))
		c.Set(loggerCtxKey{}, reqLog)
		panicked := true
		defer func() {
			status := c.Writer.Status()
			if panicked && !c.Writer.Written() {
				status = http.StatusInternalServerError // the recover middleware renders it after us
			}
			level := zapcore.InfoLevel
			if status >= 500 {
				level = zapcore.ErrorLevel
			}
			if ce := reqLog.Check(level, "request"); ce != nil {
				fields := []zap.Field{
					zap.String("method", c.Request.Method),
					zap.String("path", c.Request.URL.Path),
					zap.Int("status", status),
					zap.Duration("latency", time.Since(start)),
					zap.String("client_ip", c.ClientIP()),
					zap.Int("bytes", c.Writer.Size()),
				}
				if id := KeyID(c); id != "" {
					fields = append(fields, zap.String("key_id", id))
				}
				ce.Write(fields...)
			}
		}()
		c.Next()
		panicked = false
	}
}
