// Package metrics exposes the gateway's Prometheus metrics. It implements the
// small observer interfaces of the gateway, usage writer and limiters, so
// those packages stay free of Prometheus.
package metrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmgw/gateway/models"
)

// Metrics holds every collector on its own registry (no global state, so
// several gateways in one test process do not collide).
type Metrics struct {
	reg *prometheus.Registry

	httpRequests   *prometheus.CounterVec
	httpLatency    *prometheus.HistogramVec
	modelRequests  *prometheus.CounterVec
	modelLatency   *prometheus.HistogramVec
	tokens         *prometheus.CounterVec
	cost           *prometheus.CounterVec
	refusals       *prometheus.CounterVec
	upstreamErrors *prometheus.CounterVec
	retries        *prometheus.CounterVec
	circuit        *prometheus.CounterVec
	queueDepth     prometheus.Gauge
	queueFull      prometheus.Counter
	usageWritten   prometheus.Counter
	usageFailed    prometheus.Counter
}

// New registers the collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	latency := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
		reg: r,
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		httpLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_http_request_duration_seconds", Help: "HTTP request latency by route.", Buckets: latency,
		}, []string{"route"}),
		modelRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_model_requests_total", Help: "Model calls by requested model, serving provider and status.",
		}, []string{"model", "provider", "status"}),
		modelLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_model_request_duration_seconds", Help: "Model call latency by model and provider.", Buckets: latency,
		}, []string{"model", "provider"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tokens_total", Help: "Tokens by model, provider and direction (input/output).",
		}, []string{"model", "provider", "direction"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_cost_usd_total", Help: "Cost in USD by model and provider.",
		}, []string{"model", "provider"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_refusals_total", Help: "Requests refused by the gateway by reason (rate_limit, budget, auth, permission).",
		}, []string{"reason"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_upstream_errors_total", Help: "Failed upstream attempts by provider and error type.",
		}, []string{"provider", "type"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_upstream_retries_total", Help: "Retries of the same upstream target.",
		}, []string{"provider"}),
		circuit: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_circuit_transitions_total", Help: "Circuit-breaker transitions by provider and new state.",
		}, []string{"provider", "state"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_usage_queue_depth", Help: "Usage records waiting to be written.",
		}),
		queueFull: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_usage_queue_full_total", Help: "Times a request waited because the usage queue was full.",
		}),
		usageWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_usage_records_written_total", Help: "Usage records written to the database.",
		}),
		usageFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_usage_write_failures_total", Help: "Failed usage batch writes (retried, never dropped).",
		}),
	}
	r.MustRegister(m.httpRequests, m.httpLatency, m.modelRequests, m.modelLatency, m.tokens, m.cost,
		m.refusals, m.upstreamErrors, m.retries, m.circuit, m.queueDepth, m.queueFull, m.usageWritten, m.usageFailed)
	return m
}

// Handler serves the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// HTTPRequest observes one finished HTTP request.
func (m *Metrics) HTTPRequest(route, method string, status int, seconds float64) {
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpLatency.WithLabelValues(route).Observe(seconds)
}

// ModelCall observes a finished model call from its usage record.
func (m *Metrics) ModelCall(r *models.UsageRecord) {
	m.modelRequests.WithLabelValues(r.Model, r.Provider, strconv.Itoa(r.Status)).Inc()
	m.modelLatency.WithLabelValues(r.Model, r.Provider).Observe(float64(r.LatencyMS) / 1000)
	if r.InputTokens > 0 {
		m.tokens.WithLabelValues(r.Model, r.Provider, "input").Add(float64(r.InputTokens))
	}
	if r.OutputTokens > 0 {
		m.tokens.WithLabelValues(r.Model, r.Provider, "output").Add(float64(r.OutputTokens))
	}
	if r.Cost > 0 {
		m.cost.WithLabelValues(r.Model, r.Provider).Add(r.Cost)
	}
	switch r.ErrorType {
	case "rate_limit_error":
		m.refusals.WithLabelValues("rate_limit").Inc()
	case "budget_exceeded_error":
		m.refusals.WithLabelValues("budget").Inc()
	case "permission_error":
		m.refusals.WithLabelValues("permission").Inc()
	}
}

// UpstreamError implements gateway.Observer.
func (m *Metrics) UpstreamError(provider, kind string) {
	m.upstreamErrors.WithLabelValues(provider, kind).Inc()
}

// Retry implements gateway.Observer.
func (m *Metrics) Retry(provider string) { m.retries.WithLabelValues(provider).Inc() }

// CircuitChange counts breaker transitions.
func (m *Metrics) CircuitChange(provider, to string) { m.circuit.WithLabelValues(provider, to).Inc() }

// Usage-writer observer.

func (m *Metrics) QueueFull()        { m.queueFull.Inc() }
func (m *Metrics) Written(n int)     { m.usageWritten.Add(float64(n)) }
func (m *Metrics) WriteFailed(error) { m.usageFailed.Inc() }
func (m *Metrics) QueueDepth(n int)  { m.queueDepth.Set(float64(n)) }
