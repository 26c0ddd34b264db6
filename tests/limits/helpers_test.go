// Package limits holds black-box tests of rate limits, budgets and usage
// accounting, through the real router against the mock upstream.
package limits

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/llmgw/gateway/app"
	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/tests/testenv"
)

// nineWords is a prompt whose estimate equals its real count: 17 chars/4 +
// 4 per message + 1 = 9 = the mock's word count. With max_tokens 3 (the
// mock's reply "Hello from gpt-x" is 3 words) the reservation (12 tokens)
// equals the real usage, so limits and budgets count exactly.
const nineWords = "a a a a a a a a a"

const (
	inTok  = 9
	outTok = 3
	// price per 1k tokens of the priced aliases: a call costs 1.2.
	price    = 100.0
	callCost = float64(inTok+outTok) / 1000 * price
)

func chatBody(model string) map[string]any {
	return map[string]any{
		"model":      model,
		"messages":   []any{map[string]any{"role": "user", "content": nineWords}},
		"max_tokens": outTok,
	}
}

// clock is a controllable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// fast are the options every test uses: no retries, quick usage flushes.
func fast(c *config.Config) {
	c.Providers.Retries = 0
	c.Usage.FlushInterval = 50 * time.Millisecond
	c.Items.Enabled = false
}

// start runs an app on cfg (its DSN already set) behind a new httptest
// server; closed at cleanup (closing twice is safe).
func start(t *testing.T, cfg *config.Config, now func() time.Time) *testenv.Env {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	a, err := app.NewWithClock(cfg, zap.NewNop(), now)
	if err != nil {
		t.Fatalf("app.NewWithClock: %v", err)
	}
	srv := httptest.NewServer(a.Handler)
	env := &testenv.Env{T: t, Driver: cfg.Database.Driver, BaseURL: srv.URL, MasterKey: cfg.Admin.MasterKey,
		Config: cfg, App: a, Server: srv, Client: srv.Client()}
	t.Cleanup(func() { stop(t, env) })
	return env
}

// stop closes the server (waiting for in-flight requests) and then the app
// (flushing usage).
func stop(t *testing.T, env *testenv.Env) {
	env.Server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.App.Close(ctx); err != nil {
		t.Logf("close: %v", err)
	}
}

// freshDB returns a config on a fresh database of driver (a testenv gateway
// is started only to obtain the database, then closed).
func freshDB(t *testing.T, driver string, opts ...testenv.Option) *config.Config {
	t.Helper()
	env := testenv.New(t, driver)
	stop(t, env)
	cfg := testenv.Config(driver)
	cfg.Database.DSN = env.Config.Database.DSN
	fast(cfg)
	for _, o := range opts {
		o(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func forEachDB(t *testing.T, fn func(t *testing.T, driver string)) {
	for _, d := range testenv.Drivers {
		t.Run(d, func(t *testing.T) { fn(t, d) })
	}
}

// upstream is a started mock, closed at cleanup.
func upstream(t *testing.T) *mockupstream.Server {
	m := mockupstream.New()
	t.Cleanup(m.Close)
	return m
}

func provider(t *testing.T, env *testenv.Env, name, base string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"name": name, "api_base": base, "api_key": "sk-up", "type": "openai"}
	for k, v := range extra {
		body[k] = v
	}
	return env.MustAdmin(201, "POST", "/admin/providers", body)["id"].(string)
}

func alias(t *testing.T, env *testenv.Env, body map[string]any) {
	t.Helper()
	env.MustAdmin(201, "POST", "/admin/models/aliases", body)
}

// key creates a virtual key and returns (id, secret).
func key(t *testing.T, env *testenv.Env, body map[string]any) (string, string) {
	t.Helper()
	if body["name"] == nil {
		body["name"] = "k"
	}
	k := env.MustAdmin(201, "POST", "/admin/keys", body)
	return k["id"].(string), k["key"].(string)
}

type result struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// post sends one model request with a virtual key.
func post(client *http.Client, base, path, secret string, body any) result {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

func chat(env *testenv.Env, secret string, body any) result {
	return post(env.Client, env.BaseURL, "/v1/chat/completions", secret, body)
}

// burst fires n requests at once (released together) and returns them.
func burst(n int, send func(i int) result) []result {
	out := make([]result, n)
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(n)
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ready.Done()
			<-gate
			out[i] = send(i)
		}(i)
	}
	ready.Wait()
	close(gate)
	wg.Wait()
	return out
}

func countStatus(t *testing.T, rs []result) map[int]int {
	t.Helper()
	m := map[int]int{}
	for _, r := range rs {
		if r.err != nil {
			t.Errorf("transport error: %v", r.err)
			continue
		}
		m[r.status]++
	}
	return m
}

var counter atomic.Int64

func uniq(prefix string) string { return fmt.Sprintf("%s%d", prefix, counter.Add(1)) }

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case json.Number:
		f, _ := x.Float64()
		return f
	case string:
		f, _ := strconv.ParseFloat(x, 64)
		return f
	}
	return math.NaN()
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// errDetails decodes a gateway error and checks its type.
func errDetails(t *testing.T, r result, wantType string) map[string]any {
	t.Helper()
	typ, _, d := testenv.ErrorOf(t, r.body)
	if typ != wantType {
		t.Errorf("error type %q, want %q: %s", typ, wantType, r.body)
	}
	return d
}
