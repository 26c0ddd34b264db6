// Package fault holds the fault-tolerance tests of issue 6: circuit breaker,
// retries, timeouts, failing dependencies (Redis, the database), upstream
// faults and graceful shutdown. Every address is loopback.
package fault

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/tests/testenv"
)

// fastUsage flushes usage records quickly so counts settle fast.
func fastUsage(c *config.Config) { c.Usage.FlushInterval = 20 * time.Millisecond }

// gw is a gateway with one mock upstream, one provider and a client key.
type gw struct {
	*testenv.Env
	mock *mockupstream.Server
	key  string
}

// newGW starts the mock and the gateway, creates provider "mock" (openai)
// and a key without limits.
func newGW(t *testing.T, driver string, opts ...testenv.Option) *gw {
	t.Helper()
	mock := mockupstream.New()
	t.Cleanup(mock.Close)
	env := testenv.New(t, driver, append([]testenv.Option{fastUsage}, opts...)...)
	g := &gw{Env: env, mock: mock}
	g.provider("mock", "openai")
	k := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "fault-key"})
	g.key, _ = k["key"].(string)
	if g.key == "" {
		t.Fatalf("key create: %v", k)
	}
	return g
}

func (g *gw) provider(name, typ string) {
	g.T.Helper()
	g.MustAdmin(201, "POST", "/admin/providers", map[string]any{
		"name": name, "type": typ, "api_base": g.mock.URL(), "api_key": "sk-up",
	})
}

// alias maps alias to provider/model (model may carry mock directives).
func (g *gw) alias(alias, provider, model string) {
	g.T.Helper()
	g.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{
		"alias": alias, "provider": provider, "model": model, "routing_type": "simple",
		"input_price_per_1k": 0.001, "output_price_per_1k": 0.002,
	})
}

// routed creates a load_balance or fallback alias over targets (provider, model pairs).
func (g *gw) routed(alias, routing string, targets ...[2]string) {
	g.T.Helper()
	list := []map[string]any{}
	for _, t := range targets {
		list = append(list, map[string]any{"provider": t[0], "model": t[1], "weight": 1})
	}
	cfg := map[string]any{"targets": list}
	if routing == "fallback" {
		cfg = map[string]any{"chain": list}
	}
	g.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{
		"alias": alias, "routing_type": routing, "routing_config": cfg,
		"input_price_per_1k": 0.001, "output_price_per_1k": 0.002,
	})
}

func chatBody(model string, stream bool) map[string]any {
	return map[string]any{
		"model":    model,
		"stream":   stream,
		"messages": []map[string]any{{"role": "user", "content": "hello there"}},
	}
}

// chat sends a non-streaming chat completion.
func (g *gw) chat(model string) (*http.Response, []byte) {
	g.T.Helper()
	return g.Do("POST", "/v1/chat/completions", chatBody(model, false), map[string]string{"Authorization": "Bearer " + g.key})
}

// chatStream sends a streaming chat completion and reads the whole body.
func (g *gw) chatStream(model string) (*http.Response, []byte) {
	g.T.Helper()
	return g.Do("POST", "/v1/chat/completions", chatBody(model, true), map[string]string{"Authorization": "Bearer " + g.key})
}

// errType is the gateway error type of an error envelope.
func errType(t testing.TB, raw []byte) string {
	t.Helper()
	typ, _, _ := testenv.ErrorOf(t, raw)
	return typ
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data:") {
			out = append(out, strings.TrimSpace(strings.TrimPrefix(line, "data:")))
		}
	}
	return out
}

// sseError returns the error object of the stream's error event, if any.
func sseError(body []byte) map[string]any {
	for _, d := range sseEvents(body) {
		var m map[string]any
		if json.Unmarshal([]byte(d), &m) != nil {
			continue
		}
		if e, ok := m["error"].(map[string]any); ok {
			return e
		}
	}
	return nil
}

func endsDone(body []byte) bool {
	ev := sseEvents(body)
	return len(ev) > 0 && ev[len(ev)-1] == "[DONE]"
}

// usageRows reads every usage record from the gateway's database.
func (g *gw) usageRows() []models.UsageRecord {
	g.T.Helper()
	var rows []models.UsageRecord
	if err := g.App.DB.Order("created_at").Find(&rows).Error; err != nil {
		g.T.Fatalf("reading usage: %v", err)
	}
	return rows
}

// waitUsage polls until want usage records exist (or fails after timeout),
// then checks request ids are unique and returns the rows.
func (g *gw) waitUsage(want int, timeout time.Duration) []models.UsageRecord {
	g.T.Helper()
	deadline := time.Now().Add(timeout)
	var rows []models.UsageRecord
	for {
		rows = g.usageRows()
		if len(rows) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A short extra look for duplicates or extras arriving late.
	time.Sleep(100 * time.Millisecond)
	rows = g.usageRows()
	if len(rows) != want {
		g.T.Fatalf("usage records: %d, want %d", len(rows), want)
	}
	checkUnique(g.T, rows)
	return rows
}

func checkUnique(t testing.TB, rows []models.UsageRecord) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.RequestID] {
			t.Fatalf("duplicate usage record %s", r.RequestID)
		}
		seen[r.RequestID] = true
	}
}

// health reads GET /health.
func (g *gw) health() (int, map[string]any) {
	g.T.Helper()
	resp, raw := g.Do("GET", "/health", nil, nil)
	return resp.StatusCode, testenv.Object(g.T, raw)
}

func (g *gw) providerState(name string) string {
	g.T.Helper()
	_, h := g.health()
	ps, _ := h["providers"].(map[string]any)
	s, _ := ps[name].(string)
	return s
}

// eventually polls cond every 20ms for at most d.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
