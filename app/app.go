// Package app builds the whole gateway from a Config: database, stores,
// services, handlers and router. main.go and the black-box tests both use
// New, so the tests exercise exactly what production runs.
package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/handlers"
	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/router"
	"github.com/llmgw/gateway/services/admin"
	"github.com/llmgw/gateway/services/items"
	"github.com/llmgw/gateway/services/metrics"
	"github.com/llmgw/gateway/services/secret"
	"github.com/llmgw/gateway/services/usage"
)

// App is a built gateway.
type App struct {
	Config  *config.Config
	Log     *zap.Logger
	DB      *gorm.DB
	Stores  *models.Stores
	Box     *secret.Box
	Metrics *metrics.Metrics // nil when metrics.enabled is false
	Admin   *admin.Service
	// Usage is the asynchronous usage writer (flushed at Close).
	Usage *usage.Writer
	// Handler is the complete HTTP handler (the Gin engine).
	Handler http.Handler
	// Clock is the time source of limits, budgets and key expiry; tests
	// inject one with NewWithClock.
	Clock func() time.Time

	// ctx lives until Close: background work (catalog polling, usage
	// writer) runs under it.
	ctx    context.Context
	cancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
	closers   []func(context.Context) error // run in reverse order
}

// Extensions are what the model gateway wiring (gateway.go) adds to the
// foundation. Every field is optional.
type Extensions struct {
	// V1 mounts the model endpoints on /v1.
	V1 func(g *gin.RouterGroup)
	// OnChange runs after every admin write (reload the catalog).
	OnChange func()
	// Spend reports current spend for project and key responses.
	Spend admin.SpendSource
	// Health reports provider states for /health.
	Health handlers.HealthSource
}

// New builds the gateway. The caller must Close it.
func New(cfg *config.Config, log *zap.Logger) (*App, error) {
	return NewWithClock(cfg, log, time.Now)
}

// NewWithClock is New with an injected clock.
func NewWithClock(cfg *config.Config, log *zap.Logger, clock func() time.Time) (*App, error) {
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &App{Config: cfg, Log: log, Clock: clock, ctx: ctx, cancel: cancel}
	if err := a.build(); err != nil {
		_ = a.Close(context.Background())
		return nil, err
	}
	return a, nil
}

func (a *App) build() error {
	cfg := a.Config
	db, err := models.Open(cfg.Database)
	if err != nil {
		return err
	}
	a.DB = db
	a.OnClose(func(context.Context) error { return models.Close(db) })
	if err := models.Migrate(db); err != nil {
		return err
	}
	a.Stores = models.NewStores(db)
	if a.Box, err = secret.NewBox(cfg.Security.EncryptionKey); err != nil {
		return fmt.Errorf("security.encryption_key: %w", err)
	}
	if cfg.Metrics.Enabled {
		a.Metrics = metrics.New()
	}

	ext, err := a.wireGateway()
	if err != nil {
		return err
	}

	a.Admin = admin.New(admin.Options{Stores: a.Stores, Box: a.Box, Spend: ext.Spend, OnChange: ext.OnChange, Now: a.now()})
	deps := router.Deps{
		Log:          a.Log,
		MasterKey:    cfg.Admin.MasterKey,
		MaxBodyBytes: cfg.Server.MaxBodyBytes,
		Health:       handlers.NewHealth(func(ctx context.Context) error { return models.Ping(ctx, db) }, ext.Health, a.Stores.Providers),
		Admin:        handlers.NewAdmin(a.Admin),
		V1:           ext.V1,
	}
	if cfg.Items.Enabled {
		deps.Items = handlers.NewItems(items.New(a.Stores.Items), cfg.Server.MaxBodyBytes)
	}
	if a.Metrics != nil {
		h := a.Metrics.Handler()
		deps.Metrics = func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
		deps.Observe = a.Metrics
	}
	a.Handler = router.New(deps)
	return nil
}

func (a *App) now() func() time.Time {
	if a.Clock == nil {
		return time.Now
	}
	return a.Clock
}

// Context lives until Close; run background work under it.
func (a *App) Context() context.Context { return a.ctx }

// OnClose registers f to run at Close, after everything registered later
// (so a usage writer registered after the database flushes before it closes).
func (a *App) OnClose(f func(context.Context) error) { a.closers = append(a.closers, f) }

// Close stops background work and releases resources in reverse order of
// registration, within ctx. Safe to call twice.
func (a *App) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		a.cancel()
		var errs []error
		for i := len(a.closers) - 1; i >= 0; i-- {
			if err := a.closers[i](ctx); err != nil {
				errs = append(errs, err)
			}
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}
