// Package openapisync_test holds the router and the OpenAPI document to each
// other: every route the real engine serves is documented, and every
// documented operation is routed.
package openapisync_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/llmgw/gateway/app"
	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/openapi"
	"github.com/llmgw/gateway/tests/testenv"
)

// newApp builds the real gateway on a temporary SQLite database.
func newApp(t *testing.T, edit func(*config.Config)) *app.App {
	t.Helper()
	cfg := testenv.Config("sqlite")
	cfg.Database.DSN = filepath.Join(t.TempDir(), "gateway.db")
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	return a
}

func engine(t *testing.T, a *app.App) *gin.Engine {
	t.Helper()
	e, ok := a.Handler.(*gin.Engine)
	if !ok {
		t.Fatalf("app.Handler is %T, not *gin.Engine", a.Handler)
	}
	return e
}

var (
	ginParam     = regexp.MustCompile(`[:*][^/]*`)
	openapiParam = regexp.MustCompile(`\{[^/}]*\}`)
)

// normalise maps both syntaxes to "{}" so parameter names do not matter;
// a trailing slash is dropped.
func normalise(path string) string {
	path = ginParam.ReplaceAllString(path, "{}")
	path = openapiParam.ReplaceAllString(path, "{}")
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	return path
}

// operations is the set "METHOD path" (normalised).
type operations map[string]bool

func (o operations) sorted() []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func routed(e *gin.Engine) operations {
	ops := operations{}
	for _, r := range e.Routes() {
		ops[r.Method+" "+normalise(r.Path)] = true
	}
	return ops
}

func documented() operations {
	ops := operations{}
	for path, methods := range openapi.Paths() {
		for _, m := range methods {
			ops[m+" "+normalise(path)] = true
		}
	}
	return ops
}

func TestRoutesMatchDocument(t *testing.T) {
	a := newApp(t, func(c *config.Config) {
		c.Metrics.Enabled = true
		c.Items.Enabled = true
	})
	got, want := routed(engine(t, a)), documented()
	if len(want) == 0 {
		t.Fatal("openapi.Paths() is empty")
	}
	for _, op := range got.sorted() {
		if !want[op] {
			t.Errorf("routed but not documented: %s", op)
		}
	}
	for _, op := range want.sorted() {
		if !got[op] {
			t.Errorf("documented but not routed: %s", op)
		}
	}
	for _, op := range []string{"GET /metrics", "GET /openapi.json", "GET /health"} {
		if !got[op] {
			t.Errorf("%s is not routed", op)
		}
	}
}

// With metrics disabled, /metrics is the only documented route that goes.
func TestMetricsDisabledUnmountsOnlyMetrics(t *testing.T) {
	a := newApp(t, func(c *config.Config) {
		c.Metrics.Enabled = false
		c.Items.Enabled = true
	})
	got := routed(engine(t, a))
	if got["GET /metrics"] {
		t.Error("GET /metrics routed with metrics disabled")
	}
	for _, op := range documented().sorted() {
		if op != "GET /metrics" && !got[op] {
			t.Errorf("documented but not routed: %s", op)
		}
	}
}

func TestNormalise(t *testing.T) {
	cases := map[string]string{
		"/admin/keys/:id":               "/admin/keys/{}",
		"/admin/keys/{key_id}":          "/admin/keys/{}",
		"/admin/models/aliases/*ref":    "/admin/models/aliases/{}",
		"/admin/models/aliases/{alias}": "/admin/models/aliases/{}",
		"/items/":                       "/items",
		"/":                             "/",
		"/a/:x/b/:y":                    "/a/{}/b/{}",
	}
	for in, want := range cases {
		if got := normalise(in); got != want {
			t.Errorf("normalise(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServesOpenAPIDocument(t *testing.T) {
	a := newApp(t, func(c *config.Config) { c.Metrics.Enabled = true })
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("content-type %q", ct)
	}
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") || len(doc.Paths) != len(openapi.Paths()) {
		t.Errorf("openapi %q, %d paths (Paths() has %d)", doc.OpenAPI, len(doc.Paths), len(openapi.Paths()))
	}

	// /metrics answers when enabled.
	resp, err = srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %d", resp.StatusCode)
	}
}
