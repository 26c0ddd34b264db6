// Package modelapi_test drives the /v1 model endpoints of the real gateway
// against the scripted mock upstream, on SQLite and PostgreSQL.
package modelapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/tests/testenv"
)

// upstream is the mock behind a wrapper that notes when each upstream
// request's handler returned, so a test can see the gateway hang up.
type upstream struct {
	*mockupstream.Server
	ts *httptest.Server

	mu    sync.Mutex
	ended map[string]chan struct{} // model (from the body or azure path) → closed when its handler returned
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{Server: mockupstream.NewUnstarted(), ended: map[string]chan struct{}{}}
	u.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		var m struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(b.Bytes(), &m)
		r.Body = readCloser{bytes.NewReader(b.Bytes())}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/openai/deployments/"); ok {
			m.Model, _, _ = strings.Cut(rest, "/") // azure: the deployment
		}
		ch := u.endedChan(m.Model)
		defer close(ch)
		u.Server.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.Server.Close()
		u.ts.CloseClientConnections()
		u.ts.Close()
	})
	return u
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// endedChan is the channel closed when the (last) request for model ends.
func (u *upstream) endedChan(model string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	ch := make(chan struct{})
	u.ended[model] = ch
	return ch
}

func (u *upstream) endedFor(model string) (chan struct{}, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ch, ok := u.ended[model]
	return ch, ok
}

func (u *upstream) URL() string { return u.ts.URL }

// find returns the requests the mock answered as model, in arrival order.
func (u *upstream) find(model string) []mockupstream.Request {
	var out []mockupstream.Request
	for _, r := range u.Requests() {
		if r.Model == model {
			out = append(out, r)
		}
	}
	return out
}

// one returns the single request for model.
func (u *upstream) one(t *testing.T, model string) mockupstream.Request {
	t.Helper()
	rs := u.find(model)
	if len(rs) != 1 {
		t.Fatalf("upstream saw %d requests for %q, want 1", len(rs), model)
	}
	return rs[0]
}

// suite is one gateway with its providers, aliases and a key.
type suite struct {
	env *testenv.Env
	up  *upstream
	key string
}

// fastOpts keeps failures cheap: no circuit opening during the run, short
// backoffs.
func fastOpts(extra ...testenv.Option) []testenv.Option {
	return append([]testenv.Option{func(c *config.Config) {
		c.Circuit.FailureThreshold = 100000
		c.Circuit.MinRequests = 100000
		c.Providers.RetryBackoff = 5 * time.Millisecond
		c.Providers.RetryAfterCap = 20 * time.Millisecond
	}}, extra...)
}

// setup creates providers oai (openai), ant (anthropic), az (azure), oai2
// (second openai) and a key with no restrictions.
func setup(t *testing.T, env *testenv.Env, up *upstream) *suite {
	t.Helper()
	s := &suite{env: env, up: up}
	s.provider("oai", "openai")
	s.provider("oai2", "openai")
	s.provider("ant", "anthropic")
	s.provider("az", "azure")
	s.key = s.newKey(map[string]any{"name": "main"})["key"].(string)
	return s
}

func (s *suite) provider(name, typ string) map[string]any {
	body := map[string]any{"name": name, "type": typ, "api_key": "sk-up"}
	switch typ {
	case "openai":
		body["api_base"] = s.up.URL() + "/v1"
	case "anthropic":
		body["api_base"] = s.up.URL()
	case "azure":
		body["api_base"] = s.up.URL()
		body["api_version"] = "2024-10-21"
	}
	return s.env.MustAdmin(201, "POST", "/admin/providers", body)
}

func (s *suite) alias(body map[string]any) map[string]any {
	if _, ok := body["input_price_per_1k"]; !ok {
		body["input_price_per_1k"] = 0.5
		body["output_price_per_1k"] = 1.5
	}
	return s.env.MustAdmin(201, "POST", "/admin/models/aliases", body)
}

func (s *suite) newKey(body map[string]any) map[string]any {
	m := s.env.MustAdmin(201, "POST", "/admin/keys", body)
	if k, _ := m["key"].(string); !strings.HasPrefix(k, "sk-gw-") {
		s.env.T.Fatalf("key create: no key: %v", m)
	}
	return m
}

// call sends a model request with the suite's key.
func (s *suite) call(path string, body any) (*http.Response, []byte) {
	return s.callKey(s.key, path, body)
}

func (s *suite) callKey(key, path string, body any) (*http.Response, []byte) {
	h := map[string]string{}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	return s.env.Do("POST", path, body, h)
}

func obj(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	return testenv.Object(t, raw)
}

// wantStatus fails unless resp has status.
func wantStatus(t *testing.T, resp *http.Response, raw []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, raw)
	}
}

// wantError checks status and envelope type, returning the details.
func wantError(t *testing.T, resp *http.Response, raw []byte, status int, typ string) (string, map[string]any) {
	t.Helper()
	wantStatus(t, resp, raw, status)
	gotType, msg, details := testenv.ErrorOf(t, raw)
	if gotType != typ {
		t.Fatalf("error type %q, want %q: %s", gotType, typ, raw)
	}
	if msg == "" {
		t.Fatalf("empty error message: %s", raw)
	}
	if resp.Header.Get("X-Request-ID") == "" {
		t.Errorf("error response without X-Request-ID")
	}
	return msg, details
}

// path walks a decoded JSON value: keys for objects, ints for arrays.
func path(v any, steps ...any) any {
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// frame is one SSE frame.
type frame struct {
	event string
	data  string
}

func (f frame) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(f.data), &m); err != nil {
		t.Fatalf("frame data not JSON: %v: %q", err, f.data)
	}
	return m
}

// parseSSE splits a complete SSE body into frames.
func parseSSE(t *testing.T, raw []byte) []frame {
	t.Helper()
	var out []frame
	var cur frame
	have := false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if have {
				out = append(out, cur)
			}
			cur, have = frame{}, false
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			cur.event, have = strings.TrimSpace(strings.TrimPrefix(line, "event:")), true
		case strings.HasPrefix(line, "data:"):
			d := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			if cur.data != "" {
				cur.data += "\n"
			}
			cur.data += d
			have = true
		}
	}
	if have {
		out = append(out, cur)
	}
	return out
}

// textOf extracts text from an Anthropic system/content value (a string or
// a list of text blocks) or an OpenAI content value.
func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, p := range x {
			if t := str(path(p, "text")); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, " ")
	}
	return ""
}

func jsonEq(t *testing.T, got any, wantJSON string) {
	t.Helper()
	var want any
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("got %s, want %s", g, w)
	}
}

func parseJSONString(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v: %q", err, s)
	}
	return v
}

var _ = fmt.Sprintf
