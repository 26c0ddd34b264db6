package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/llmgw/gateway/middleware"
	"github.com/llmgw/gateway/models"
)

// HealthSource reports each provider's state from recent traffic
// (healthy|degraded|unhealthy|disabled), keyed by provider name.
type HealthSource interface {
	ProviderStates(ctx context.Context) map[string]string
}

// ProviderLister reads the providers (the fallback when there is no HealthSource).
type ProviderLister interface {
	All(ctx context.Context) ([]models.Provider, error)
}

// Health serves GET /health.
type Health struct {
	ping      func(context.Context) error
	source    HealthSource
	providers ProviderLister
}

// healthPingTimeout keeps /health fast when the database hangs: a load
// balancer would rather see a quick 503.
const healthPingTimeout = 2 * time.Second

// NewHealth builds the handler. ping checks the database; source may be nil,
// then an enabled provider is "healthy" and a disabled one "disabled".
func NewHealth(ping func(context.Context) error, source HealthSource, providers ProviderLister) *Health {
	return &Health{ping: ping, source: source, providers: providers}
}

type healthBody struct {
	Status    string            `json:"status"`
	Version   string            `json:"version"`
	Providers map[string]string `json:"providers"`
}

// Get is GET /health.
func (h *Health) Get(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), healthPingTimeout)
	defer cancel()
	body := healthBody{Status: "healthy", Version: Version, Providers: map[string]string{}}
	if err := h.ping(ctx); err != nil {
		middleware.Logger(c).Warn("health: database unreachable", zap.Error(err))
		body.Status = "unhealthy"
		if h.source != nil {
			body.Providers = h.source.ProviderStates(ctx)
		}
		c.JSON(http.StatusServiceUnavailable, body)
		return
	}
	if h.source != nil {
		if states := h.source.ProviderStates(ctx); states != nil {
			body.Providers = states
		}
	} else {
		list, err := h.providers.All(ctx)
		if err != nil {
			middleware.Logger(c).Warn("health: cannot list providers", zap.Error(err))
			body.Status = "unhealthy"
			c.JSON(http.StatusServiceUnavailable, body)
			return
		}
		for _, p := range list {
			state := "healthy"
			if !p.Enabled {
				state = "disabled"
			}
			body.Providers[p.Name] = state
		}
	}
	c.JSON(http.StatusOK, body)
}
