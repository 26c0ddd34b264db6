// Package hotpath benchmarks the authenticated model call through the real
// router (auth, rate limit, budget, usage recording all on) against an
// in-process mock upstream, next to the same request sent straight to the
// mock: the difference is the gateway's own cost.
package hotpath

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/tests/testenv"
)

const chatBody = `{"model":"fast","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello there, how are you?"}],"max_tokens":16}`

func setup(b *testing.B) (h http.Handler, key string, mock *mockupstream.Server) {
	mock = mockupstream.New()
	b.Cleanup(mock.Close)
	mock.SetRecording(false)
	env := testenv.New(b, "sqlite")
	env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": "oai", "type": "openai", "api_base": mock.URL() + "/v1", "api_key": "sk-up"})
	env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": "ant", "type": "anthropic", "api_base": mock.URL(), "api_key": "sk-up"})
	env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{"alias": "fast", "provider": "oai", "model": "gpt-4o-mini", "input_price_per_1k": 0.15, "output_price_per_1k": 0.6})
	env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{"alias": "claude", "provider": "ant", "model": "claude-x", "input_price_per_1k": 3, "output_price_per_1k": 15})
	k := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "bench", "rpm_limit": 100000000, "tpm_limit": 1000000000000, "budget_limit": 1e12})
	return env.App.Handler, k["key"].(string), mock
}

func run(b *testing.B, h http.Handler, path, key, body string) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
}

// BenchmarkDirectUpstream is the baseline: the mock upstream alone.
func BenchmarkDirectUpstream(b *testing.B) {
	mock := mockupstream.New()
	defer mock.Close()
	mock.SetRecording(false)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	body := []byte(strings.Replace(chatBody, `"fast"`, `"gpt-4o-mini"`, 1))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodPost, mock.URL()+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-up")
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkGatewayChatSameFormat: chat client → OpenAI upstream.
func BenchmarkGatewayChatSameFormat(b *testing.B) {
	h, key, _ := setup(b)
	run(b, h, "/v1/chat/completions", key, chatBody)
}

// BenchmarkGatewayChatToAnthropic: chat client → Anthropic upstream (translated).
func BenchmarkGatewayChatToAnthropic(b *testing.B) {
	h, key, _ := setup(b)
	run(b, h, "/v1/chat/completions", key, strings.Replace(chatBody, `"fast"`, `"claude"`, 1))
}

// BenchmarkGatewayMessagesToOpenAI: messages client → OpenAI upstream.
func BenchmarkGatewayMessagesToOpenAI(b *testing.B) {
	h, key, _ := setup(b)
	run(b, h, "/v1/messages", key, `{"model":"fast","max_tokens":16,"system":"Be brief.","messages":[{"role":"user","content":"Hello there, how are you?"}]}`)
}

// TestHotPathServesFromMemory pins the contract of the hot path: once a key
// and alias are cached, a model call succeeds with the database closed.
func TestHotPathServesFromMemory(t *testing.T) {
	mock := mockupstream.New()
	defer mock.Close()
	env := testenv.New(t, "sqlite")
	env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": "oai", "type": "openai", "api_base": mock.URL() + "/v1", "api_key": "sk-up"})
	env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{"alias": "fast", "provider": "oai", "model": "gpt-4o-mini"})
	k := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "k"})
	hdr := map[string]string{"Authorization": "Bearer " + k["key"].(string)}
	if resp, raw := env.Do("POST", "/v1/chat/completions", chatBody, hdr); resp.StatusCode != 200 {
		t.Fatalf("warm-up: %d %s", resp.StatusCode, raw)
	}
	sqlDB, err := env.App.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.Close() // every later database access fails
	for i := 0; i < 5; i++ {
		if resp, raw := env.Do("POST", "/v1/chat/completions", chatBody, hdr); resp.StatusCode != 200 {
			t.Fatalf("call %d with the database closed: %d %s", i, resp.StatusCode, raw)
		}
	}
}
