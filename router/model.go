package router

import (
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/handlers"
	"github.com/llmgw/gateway/middleware"
	"github.com/llmgw/gateway/services/budget"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/chat"
	"github.com/llmgw/gateway/services/gateway"
	"github.com/llmgw/gateway/services/limits"
	"github.com/llmgw/gateway/services/messages"
	"github.com/llmgw/gateway/services/responses"
)

// ModelDeps is what the /v1 model endpoints need.
type ModelDeps struct {
	Catalog  *catalog.Catalog
	Limiter  limits.Limiter
	Budgets  budget.Tracker
	Handlers *handlers.Model
	// Record receives every finished model call (usage writer, metrics).
	Record func(gateway.Call)
	Now    func() time.Time
	// DefaultReserveTokens is the output estimate when max_tokens is absent.
	DefaultReserveTokens int
}

// MountModel mounts the model endpoints on the /v1 group. Order on a model
// call: key auth → usage accounting → decode once (and resolve the model,
// check allowed_models) → key rate limit (reserve) → budget (reserve) →
// handler; the reservations settle on the way back, exactly once.
func MountModel(g *gin.RouterGroup, d ModelDeps) {
	auth := middleware.KeyAuth(d.Catalog, d.Now)
	call := func(decode middleware.Decoder, h gin.HandlerFunc) []gin.HandlerFunc {
		return []gin.HandlerFunc{
			auth,
			middleware.Account(d.Record, d.Now),
			middleware.Decode(decode, d.Catalog, d.DefaultReserveTokens),
			middleware.RateLimit(d.Limiter),
			middleware.Budget(d.Budgets, d.Catalog, d.DefaultReserveTokens),
			h,
		}
	}
	g.POST("/chat/completions", call(chat.DecodeRequest, d.Handlers.ChatCompletions)...)
	g.POST("/messages", call(messages.DecodeRequest, d.Handlers.Messages)...)
	g.POST("/responses", call(responses.DecodeRequest, d.Handlers.Responses)...)
	g.GET("/models", auth, d.Handlers.ListModels)
}
