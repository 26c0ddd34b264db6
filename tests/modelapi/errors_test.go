package modelapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/tests/testenv"
)

func testErrors(t *testing.T, s *suite) {
	s.alias(simple("err-alias", "oai", "err-alias"))

	// 400 validation: details.fields names each offending field.
	validation := []struct {
		name, path string
		body       any
		field      string // "" = only the status/type
	}{
		{"chat_bad_json", "/v1/chat/completions", `{"model": "err-alias", "messages": [`, ""},
		{"messages_bad_json", "/v1/messages", `{not json`, ""},
		{"responses_bad_json", "/v1/responses", `[1,2`, ""},
		{"chat_temperature_3", "/v1/chat/completions", func() any { b := chatBody("err-alias", false); b["temperature"] = 3; return b }(), "temperature"},
		{"messages_temperature_1.5", "/v1/messages", func() any { b := messagesBody("err-alias", false); b["temperature"] = 1.5; return b }(), "temperature"},
		{"messages_missing_max_tokens", "/v1/messages", func() any { b := messagesBody("err-alias", false); delete(b, "max_tokens"); return b }(), "max_tokens"},
		{"messages_max_tokens_0", "/v1/messages", func() any { b := messagesBody("err-alias", false); b["max_tokens"] = 0; return b }(), "max_tokens"},
		{"chat_empty_messages", "/v1/chat/completions", map[string]any{"model": "err-alias", "messages": []any{}}, "messages"},
		{"messages_empty_messages", "/v1/messages", map[string]any{"model": "err-alias", "max_tokens": 5, "messages": []any{}}, "messages"},
		{"chat_wrong_type", "/v1/chat/completions", map[string]any{"model": "err-alias", "messages": "hi"}, "messages"},
		{"chat_missing_model", "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, "model"},
		{"chat_bad_role", "/v1/chat/completions", map[string]any{"model": "err-alias", "messages": []any{map[string]any{"role": "wizard", "content": "hi"}}}, ""},
		{"responses_missing_input", "/v1/responses", map[string]any{"model": "err-alias"}, "input"},
	}
	for _, tc := range validation {
		t.Run("400/"+tc.name, func(t *testing.T) {
			t.Parallel()
			resp, raw := s.call(tc.path, tc.body)
			wantError(t, resp, raw, 400, "invalid_request_error")
			if tc.field != "" {
				f := testenv.FieldReasons(t, raw)
				found := false
				for k := range f {
					if k == tc.field || strings.HasPrefix(k, tc.field+".") || strings.HasPrefix(k, tc.field+"[") {
						found = true
					}
				}
				if !found {
					t.Errorf("details.fields %v lacks %q", f, tc.field)
				}
			}
		})
	}
	t.Cleanup(func() {
		if n := s.up.Count("err-alias"); n != 0 {
			t.Errorf("invalid requests reached the upstream %d times", n)
		}
	})

	t.Run("401", func(t *testing.T) {
		t.Parallel()
		for _, k := range []string{"", "sk-gw-00000000000000000000000000000000", "garbage", testenv.MasterKey} {
			resp, raw := s.callKey(k, "/v1/chat/completions", chatBody("err-alias", false))
			wantError(t, resp, raw, 401, "authentication_error")
		}
		// X-API-Key works too, as the second way to send a key.
		resp, raw := s.env.Do("POST", "/v1/chat/completions", chatBody("oai:xapikey", false), map[string]string{"X-API-Key": s.key})
		wantStatus(t, resp, raw, 200)
	})

	t.Run("403_disabled_key", func(t *testing.T) {
		t.Parallel()
		k := s.newKey(map[string]any{"name": "to-disable"})
		resp, raw := s.callKey(k["key"].(string), "/v1/chat/completions", chatBody("oai:dk", false))
		wantStatus(t, resp, raw, 200)
		s.env.MustAdmin(200, "PUT", "/admin/keys/"+k["id"].(string), map[string]any{"enabled": false})
		resp, raw = s.callKey(k["key"].(string), "/v1/chat/completions", chatBody("oai:dk", false))
		wantError(t, resp, raw, 403, "permission_error")
		if s.up.Count("dk") != 1 {
			t.Errorf("disabled key reached the upstream")
		}
	})

	t.Run("401_deleted_key", func(t *testing.T) {
		t.Parallel()
		k := s.newKey(map[string]any{"name": "to-delete"})
		resp, raw := s.callKey(k["key"].(string), "/v1/chat/completions", chatBody("oai:delk", false))
		wantStatus(t, resp, raw, 200)
		s.env.MustAdmin(200, "DELETE", "/admin/keys/"+k["id"].(string), nil)
		resp, raw = s.callKey(k["key"].(string), "/v1/chat/completions", chatBody("oai:delk", false))
		wantError(t, resp, raw, 401, "authentication_error")
	})

	t.Run("404_unknown_route", func(t *testing.T) {
		t.Parallel()
		resp, raw := s.call("/v1/no-such-endpoint", chatBody("oai:x", false))
		wantError(t, resp, raw, 404, "not_found_error")
	})

	t.Run("403_expired_key", func(t *testing.T) {
		t.Parallel()
		exp := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
		k := s.newKey(map[string]any{"name": "expiring", "expires_at": exp})
		resp, raw := s.callKey(k["key"].(string), "/v1/chat/completions", chatBody("oai:ek", false))
		wantStatus(t, resp, raw, 200)
		time.Sleep(2 * time.Second)
		resp, raw = s.callKey(k["key"].(string), "/v1/chat/completions", chatBody("oai:ek", false))
		wantError(t, resp, raw, 403, "permission_error")
	})

	upstreamErrors := []struct {
		name, model string
		status      int
		typ         string
		upStatus    float64 // details.status, 0 = not checked
	}{
		{"502_upstream_500", "oai:e500+fail-500", 502, "provider_error", 500},
		{"502_upstream_500_anthropic", "ant:e500+fail-500", 502, "provider_error", 500},
		{"502_malformed", "oai:emal+malformed", 502, "provider_error", 0},
		{"502_malformed_anthropic", "ant:emal+malformed", 502, "provider_error", 0},
		{"502_upstream_401", "oai:e401+fail-401", 502, "provider_error", 401},
		{"502_upstream_403_azure", "az:e403+fail-403", 502, "provider_error", 403},
		{"429_upstream", "oai:e429+fail-429", 429, "rate_limit_error", 0},
		{"429_upstream_anthropic", "ant:e429+fail-429", 429, "rate_limit_error", 0},
	}
	for _, tc := range upstreamErrors {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, raw := s.call("/v1/chat/completions", chatBody(tc.model, false))
			_, details := wantError(t, resp, raw, tc.status, tc.typ)
			prov, _, _ := strings.Cut(tc.model, ":")
			switch tc.status {
			case 502:
				if details["provider"] != prov {
					t.Errorf("details.provider %v, want %s", details["provider"], prov)
				}
				if tc.upStatus != 0 && num(details["status"]) != tc.upStatus {
					t.Errorf("details.status %v, want %v", details["status"], tc.upStatus)
				}
			case 429:
				if details["scope"] != "provider" || str(details["limit_type"]) == "" {
					t.Errorf("details.scope %v limit_type %v, want provider and a limit type", details["scope"], details["limit_type"])
				}
				if resp.Header.Get("Retry-After") == "" {
					t.Errorf("no Retry-After header")
				}
			}
		})
	}

	t.Run("429_simple_alias", func(t *testing.T) {
		t.Parallel()
		s.alias(simple("rl-alias", "oai", "rl+fail-429"))
		resp, raw := s.call("/v1/messages", messagesBody("rl-alias", false))
		_, details := wantError(t, resp, raw, 429, "rate_limit_error")
		if details["scope"] != "provider" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("scope %v Retry-After %q", details["scope"], resp.Header.Get("Retry-After"))
		}
	})

	t.Run("400_upstream_passthrough", func(t *testing.T) {
		t.Parallel()
		for _, m := range []string{"oai:e400+fail-400", "ant:e400+fail-400"} {
			resp, raw := s.call("/v1/chat/completions", chatBody(m, false))
			msg, _ := wantError(t, resp, raw, 400, "invalid_request_error")
			if !strings.Contains(msg, "fail-400") {
				t.Errorf("message %q does not carry the upstream message", msg)
			}
		}
	})

	t.Run("404_upstream_passthrough", func(t *testing.T) {
		t.Parallel()
		resp, raw := s.call("/v1/chat/completions", chatBody("oai:e404+fail-404", false))
		wantError(t, resp, raw, 404, "invalid_request_error")
	})

	t.Run("503_all_targets_fail", func(t *testing.T) {
		t.Parallel()
		s.alias(chain("all-fail", [2]string{"oai", "af1+fail-500"}, [2]string{"ant", "af2+fail-503"}))
		resp, raw := s.call("/v1/chat/completions", chatBody("all-fail", false))
		wantError(t, resp, raw, 503, "service_unavailable")
		if s.up.Count("af1+fail-500") == 0 || s.up.Count("af2+fail-503") == 0 {
			t.Errorf("not every target was tried")
		}
	})

	t.Run("504_timeout", func(t *testing.T) {
		t.Parallel()
		env := testenv.New(t, s.env.Driver, fastOpts(func(c *config.Config) {
			c.Providers.Timeout = 300 * time.Millisecond
		})...)
		ts := setup(t, env, s.up)
		for _, m := range []string{"oai:to+hang", "ant:to+slow-2000"} {
			start := time.Now()
			resp, raw := ts.call("/v1/chat/completions", chatBody(m, false))
			_, details := wantError(t, resp, raw, 504, "timeout_error")
			if el := time.Since(start); el > 1500*time.Millisecond {
				t.Errorf("504 after %v", el)
			}
			_ = details
		}
		// A timed-out target falls back to the next one.
		ts.alias(chain("to-chain", [2]string{"oai", "toc+hang"}, [2]string{"ant", "toc-ok"}))
		resp, raw := ts.call("/v1/chat/completions", chatBody("to-chain", false))
		wantStatus(t, resp, raw, 200)
		if resp.Header.Get("X-Gateway-Model") != "toc-ok" {
			t.Errorf("served by %q", resp.Header.Get("X-Gateway-Model"))
		}
		// A stream that never starts is a JSON 504 too.
		resp, raw = ts.call("/v1/chat/completions", chatBody("az:to-s+hang", true))
		wantError(t, resp, raw, 504, "timeout_error")
	})
}
