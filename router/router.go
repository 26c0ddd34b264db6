// Package router is the one place that shows every route group and the
// middleware order of the gateway.
package router

import (
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/llmgw/gateway/handlers"
	"github.com/llmgw/gateway/middleware"
	"github.com/llmgw/gateway/openapi"
	"github.com/llmgw/gateway/services/apierr"
)

// Deps is everything the routes need. Optional parts are nil when absent.
type Deps struct {
	Log          *zap.Logger
	MasterKey    string // admin credential; "" = every /admin call is 401
	MaxBodyBytes int64  // server.max_body_bytes

	Health *handlers.Health
	Admin  *handlers.Admin
	// Items serves /items; nil = the group is not mounted (items.enabled: false)
	// and its paths answer 404 like any unknown route.
	Items *handlers.Items

	// V1 mounts the model endpoints on the /v1 group, which already carries
	// the body limit; nil = no /v1 routes.
	V1 func(g *gin.RouterGroup)
	// Metrics serves GET /metrics; nil = not mounted (metrics.enabled: false).
	Metrics gin.HandlerFunc
	// Observe records HTTP metrics for every request; nil = none.
	Observe middleware.HTTPObserver
}

var releaseMode sync.Once

// New builds the engine: request id → recover → access log → metrics on
// every request; then /health, /openapi.json, /metrics, /admin (master key), /items and /v1.
func New(d Deps) *gin.Engine {
	releaseMode.Do(func() { gin.SetMode(gin.ReleaseMode) }) // no debug route dump; process-wide, so once
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	e := gin.New() // no default logger or recovery: ours follow
	e.HandleMethodNotAllowed = true
	_ = e.SetTrustedProxies(nil) // client IP = the TCP peer unless a proxy setup says otherwise
	e.Use(middleware.RequestIDs(), middleware.Recover(log), middleware.AccessLog(log))
	if d.Observe != nil {
		e.Use(middleware.HTTPMetrics(d.Observe))
	}
	e.NoRoute(func(c *gin.Context) {
		handlers.RenderError(c, apierr.NotFound("No route for "+c.Request.Method+" "+c.Request.URL.Path+"."))
	})
	e.NoMethod(func(c *gin.Context) {
		handlers.RenderError(c, apierr.InvalidRequestStatus(http.StatusMethodNotAllowed,
			"Method "+c.Request.Method+" is not allowed on "+c.Request.URL.Path+".", nil))
	})

	e.GET("/health", d.Health.Get)
	e.GET("/openapi.json", gin.WrapH(openapi.Handler()))
	if d.Metrics != nil {
		e.GET("/metrics", d.Metrics)
	}
	adminRoutes(e.Group("/admin", middleware.AdminAuth(d.MasterKey), middleware.BodyLimit(d.MaxBodyBytes)), d.Admin)
	if d.Items != nil {
		itemRoutes(e.Group("/items"), d.Items)
	}
	if d.V1 != nil {
		d.V1(e.Group("/v1", middleware.BodyLimit(d.MaxBodyBytes)))
	}
	return e
}

// adminRoutes mounts the admin API: full CRUD per resource.
func adminRoutes(g *gin.RouterGroup, h *handlers.Admin) {
	crud := func(path string, list, create, get, update, del gin.HandlerFunc) {
		g.GET(path, list)
		g.POST(path, create)
		g.GET(path+"/:id", get)
		g.PUT(path+"/:id", update)
		g.DELETE(path+"/:id", del)
	}
	crud("/providers", h.ListProviders, h.CreateProvider, h.GetProvider, h.UpdateProvider, h.DeleteProvider)
	crud("/projects", h.ListProjects, h.CreateProject, h.GetProject, h.UpdateProject, h.DeleteProject)
	crud("/keys", h.ListKeys, h.CreateKey, h.GetKey, h.UpdateKey, h.DeleteKey)
	// An alias is addressed by id or by name, and names may contain "/"
	// ("openai/gpt-4o"), hence a catch-all instead of :id.
	g.GET("/models/aliases", h.ListAliases)
	g.POST("/models/aliases", h.CreateAlias)
	g.GET("/models/aliases/*ref", h.GetAlias)
	g.PUT("/models/aliases/*ref", h.UpdateAlias)
	g.DELETE("/models/aliases/*ref", h.DeleteAlias)
	g.GET("/usage/stats", h.UsageStats)
}

// itemRoutes mounts the item service (its own error envelope, no credential).
func itemRoutes(g *gin.RouterGroup, h *handlers.Items) {
	g.GET("", h.List)
	g.POST("", h.Create)
	g.GET("/:item_id", h.Get)
}
