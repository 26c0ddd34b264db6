package tests

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/tests/testenv"
)

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	env := testenv.New(t, "sqlite")
	cases := []struct {
		method, path string
		status       int
		typ          string
	}{
		{"GET", "/nope", 404, "not_found_error"},
		{"GET", "/admin/nope", 404, "not_found_error"},
		{"GET", "/v1/chat/completions", 405, "invalid_request_error"},
		{"POST", "/v1/nope", 404, "not_found_error"},
		{"DELETE", "/health", 405, "invalid_request_error"},
		{"PATCH", "/admin/providers", 405, "invalid_request_error"},
		{"DELETE", "/items", 405, "invalid_request_error"},
	}
	for _, tc := range cases {
		resp, raw := env.Do(tc.method, tc.path, nil, nil)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
			continue
		}
		if typ, msg, _ := testenv.ErrorOf(t, raw); typ != tc.typ || msg == "" {
			t.Errorf("%s %s: %s", tc.method, tc.path, raw)
		}
		if resp.Header.Get("X-Request-ID") == "" {
			t.Errorf("%s %s: no X-Request-ID", tc.method, tc.path)
		}
	}
}

func TestBodyTooLarge(t *testing.T) {
	env := testenv.New(t, "sqlite", func(c *config.Config) { c.Server.MaxBodyBytes = 1024 })
	big := `{"name":"` + strings.Repeat("x", 2000) + `","api_base":"https://x"}`
	resp, raw := env.Admin("POST", "/admin/providers", big)
	if typ, _, _ := testenv.ErrorOf(t, raw); resp.StatusCode != 413 || typ != "invalid_request_error" {
		t.Fatalf("Content-Length over limit: %d %s", resp.StatusCode, raw)
	}
	// Without Content-Length (chunked): caught while reading.
	req, _ := http.NewRequest("POST", env.BaseURL+"/admin/providers", io.NopCloser(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+env.MasterKey)
	r2, err := env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(r2.Body)
	r2.Body.Close()
	if typ, _, _ := testenv.ErrorOf(t, raw); r2.StatusCode != 413 || typ != "invalid_request_error" {
		t.Fatalf("chunked over limit: %d %s", r2.StatusCode, raw)
	}
	// Items answer in their own shape.
	r3, raw := env.Do("POST", "/items", `{"name":"`+strings.Repeat("x", 2000)+`"}`, nil)
	if r3.StatusCode != 413 || !strings.HasPrefix(string(raw), `{"detail":"`) {
		t.Fatalf("items over limit: %d %s", r3.StatusCode, raw)
	}
	// Under the limit still works.
	env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": "small", "api_base": "https://x"})
}

func TestHealth(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		resp, raw := env.Do("GET", "/health", nil, nil)
		h := testenv.Object(t, raw)
		if resp.StatusCode != 200 || h["status"] != "healthy" || h["version"] != "1.0.0" || len(h["providers"].(map[string]any)) != 0 {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": "on", "api_base": "https://x"})
		env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": "off", "api_base": "https://x", "enabled": false})
		_, raw = env.Do("GET", "/health", nil, nil)
		p := testenv.Object(t, raw)["providers"].(map[string]any)
		if p["on"] != "healthy" || p["off"] != "disabled" {
			t.Fatalf("providers: %v", p)
		}

		// Database gone: 503 unhealthy.
		if err := models.Close(env.App.DB); err != nil {
			t.Fatal(err)
		}
		resp, raw = env.Do("GET", "/health", nil, nil)
		if h := testenv.Object(t, raw); resp.StatusCode != 503 || h["status"] != "unhealthy" || h["version"] != "1.0.0" {
			t.Fatalf("closed db: %d %s", resp.StatusCode, raw)
		}
	})
}

func TestRequestID(t *testing.T) {
	env := testenv.New(t, "sqlite")
	cases := []struct {
		sent string
		kept bool
	}{
		{"", false},
		{"client-id_1.2", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"has space", false},
		{"semi;colon", false},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		h := map[string]string{}
		if tc.sent != "" {
			h["X-Request-ID"] = tc.sent
		}
		resp, _ := env.Do("GET", "/health", nil, h)
		got := resp.Header.Get("X-Request-ID")
		if tc.kept != (got == tc.sent) || got == "" {
			t.Errorf("sent %q got %q", tc.sent, got)
		}
		if seen[got] {
			t.Errorf("request id %q repeated", got)
		}
		seen[got] = true
	}
}
