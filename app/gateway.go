package app

import (
	"context"
	"fmt"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/llmgw/gateway/handlers"
	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/router"
	"github.com/llmgw/gateway/services/budget"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/gateway"
	"github.com/llmgw/gateway/services/health"
	"github.com/llmgw/gateway/services/limits"
	"github.com/llmgw/gateway/services/provider"
	_ "github.com/llmgw/gateway/services/provider/all" // registers every provider type
	"github.com/llmgw/gateway/services/usage"
)

// catalogPoll is how often an instance checks whether another instance
// changed keys, aliases or providers: the bound on cross-instance staleness.
const catalogPoll = 500 * time.Millisecond

// wireGateway builds the model gateway: catalog, provider clients, limits,
// budgets, health, usage writer and the /v1 routes.
func (a *App) wireGateway() (Extensions, error) {
	cfg, log, now := a.Config, a.Log, a.now()
	ctx := a.Context()

	cat, err := catalog.New(ctx, models.NewCatalogSource(a.DB), a.Box, catalog.Options{
		OnError: func(err error) { log.Warn("catalog reload failed", zap.Error(err)) },
	})
	if err != nil {
		return Extensions{}, fmt.Errorf("loading catalog: %w", err)
	}
	go cat.Watch(ctx, catalogPoll)

	hc := provider.NewHTTPClient(provider.HTTPOptions{
		MaxIdleConnsPerHost: cfg.Providers.MaxIdleConnsPerHost,
		ConnectTimeout:      cfg.Providers.ConnectTimeout,
		FirstByteTimeout:    cfg.Providers.FirstByteTimeout,
		StreamIdleTimeout:   cfg.Providers.StreamIdleTimeout,
	})
	a.OnClose(func(context.Context) error { hc.CloseIdleConnections(); return nil })

	usageStore := a.Stores.Usage
	loadSpend := func(ctx context.Context, kind, id string, since time.Time) (float64, error) {
		return usageStore.SumCost(ctx, kind+"_id", id, since)
	}
	limiter, tracker, err := a.limitsAndBudgets(loadSpend, now)
	if err != nil {
		return Extensions{}, err
	}

	ht := health.New(health.Options{
		FailureThreshold:   cfg.Circuit.FailureThreshold,
		ErrorRateThreshold: cfg.Circuit.ErrorRateThreshold,
		MinRequests:        cfg.Circuit.MinRequests,
		Window:             cfg.Circuit.Window,
		Cooldown:           cfg.Circuit.Cooldown,
	}, now, func(p, from, to string) {
		log.Warn("provider circuit changed", zap.String("provider", p), zap.String("from", from), zap.String("to", to))
		if a.Metrics != nil {
			a.Metrics.CircuitChange(p, to)
		}
	})

	var obs gateway.Observer
	var usageMetrics usage.Metrics
	if a.Metrics != nil {
		obs, usageMetrics = a.Metrics, a.Metrics
	}
	gw := gateway.New(provider.NewRegistry(hc), limiter, ht, obs, gateway.Options{
		Timeout:       cfg.Providers.Timeout,
		Retries:       cfg.Providers.Retries,
		RetryBackoff:  cfg.Providers.RetryBackoff,
		RetryAfterCap: cfg.Providers.RetryAfterCap,
	})

	uw := usage.NewWriter(usageStore, usage.Options{
		QueueSize: cfg.Usage.QueueSize, BatchSize: cfg.Usage.BatchSize, FlushInterval: cfg.Usage.FlushInterval,
		EnqueueWait: 50 * time.Millisecond,
	}, usageMetrics, func(msg string, err error) { log.Error(msg, zap.Error(err)) })
	uw.Start()
	// Registered after the database, so it runs before the database closes.
	a.OnClose(uw.Close)
	a.Usage = uw

	record := func(call gateway.Call) {
		rec := call.Record(now())
		if a.Metrics != nil {
			a.Metrics.ModelCall(&rec)
		}
		// The request's own context may be gone (client disconnect); the
		// record must still be written.
		if err := uw.Enqueue(context.Background(), rec); err != nil {
			log.Error("usage record not queued", zap.String("request_id", rec.RequestID), zap.Error(err))
		}
	}

	deps := router.ModelDeps{
		Catalog: cat, Limiter: limiter, Budgets: tracker,
		Handlers: handlers.NewModel(gw, cat), Record: record, Now: now,
		DefaultReserveTokens: cfg.Budgets.DefaultReserveTokens,
	}
	return Extensions{
		V1:       func(g *gin.RouterGroup) { router.MountModel(g, deps) },
		OnChange: cat.Invalidate,
		Spend:    spendSource{tracker},
		Health:   healthSource{cat: cat, tracker: ht},
	}, nil
}

// limitsAndBudgets picks in-process counters, or Redis-backed ones (with
// in-process fallback per redis.fail_open) when redis.url is set.
func (a *App) limitsAndBudgets(load budget.SpendLoader, now func() time.Time) (limits.Limiter, budget.Tracker, error) {
	cfg, log := a.Config, a.Log
	memLimiter := limits.NewMemory(now)
	memBudget := budget.NewMemory(load, now)
	if cfg.Redis.URL == "" {
		return memLimiter, memBudget, nil
	}
	opts, err := redis.ParseURL(cfg.Redis.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("config: redis.url is not a valid Redis URL: %w", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = time.Second, time.Second, time.Second
	// Fail fast while Redis is down: the failover's once-a-second probe runs
	// on a client request, and go-redis' defaults (5 dial attempts 100ms
	// apart, 3 command retries) made that request wait about a second.
	opts.DialerRetries, opts.MaxRetries = 1, 1
	rc := redis.NewClient(opts)
	a.OnClose(func(context.Context) error { return rc.Close() })
	state := func(what string) func(bool, error) {
		return func(up bool, err error) {
			if up {
				log.Info("redis reachable again; "+what+" shared across instances", zap.String("component", what))
				return
			}
			mode := "refusing requests with 503 (redis.fail_open=false)"
			if cfg.Redis.FailOpen {
				mode = "counting in process (redis.fail_open=true)"
			}
			log.Error("redis unreachable; "+what+" "+mode, zap.Error(err))
		}
	}
	limiter := limits.NewFailover(limits.NewRedis(rc, "gw:rl:", now), memLimiter, cfg.Redis.FailOpen, state("rate limits"), now)
	tracker := budget.NewFailover(budget.NewRedis(rc, "gw:budget:", load, now), memBudget, cfg.Redis.FailOpen, state("budgets"), now)
	return limiter, tracker, nil
}

// spendSource serves current_spend of admin responses from the budget
// tracker, which already includes calls not yet flushed to the usage table.
type spendSource struct{ t budget.Tracker }

func (s spendSource) CurrentSpend(ctx context.Context, scope, id, period string) (float64, error) {
	return s.t.Spend(ctx, scope, id, budget.Period(period))
}

// healthSource reports every provider of the catalog with its circuit state.
type healthSource struct {
	cat     *catalog.Catalog
	tracker *health.Tracker
}

func (h healthSource) ProviderStates(context.Context) map[string]string {
	ps := h.cat.Current().Providers()
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		out[p.Name] = string(h.tracker.State(p.Name, p.Enabled))
	}
	return out
}
