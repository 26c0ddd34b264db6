package modelapi_test

import (
	"strings"
	"testing"
)

// testStreamErrors: failures before the first byte of a stream are plain
// JSON errors, and fallback still works for streams.
func testStreamErrors(t *testing.T, s *suite) {
	t.Run("stream_fallback_before_first_byte", func(t *testing.T) {
		t.Parallel()
		s.alias(chain("sfb", [2]string{"oai", "sfb1+fail-500"}, [2]string{"ant", "sfb2"}))
		body := chatBody("sfb", true)
		body["stream_options"] = map[string]any{"include_usage": true}
		resp, raw := s.call("/v1/chat/completions", body)
		wantStatus(t, resp, raw, 200)
		checkChatStream(t, resp, raw, "sfb", "Hello from sfb2", true)
		if resp.Header.Get("X-Gateway-Provider") != "ant" || s.up.Count("sfb1+fail-500") != 1 {
			t.Errorf("served by %q", resp.Header.Get("X-Gateway-Provider"))
		}
		resp, raw = s.call("/v1/messages", messagesBody("sfb", true))
		wantStatus(t, resp, raw, 200)
		checkMessagesStream(t, resp, raw, "sfb", "Hello from sfb2")
	})
	for _, tc := range []struct {
		name, path, model string
		status            int
		typ               string
	}{
		{"chat_400", "/v1/chat/completions", "oai:se+fail-400", 400, "invalid_request_error"},
		{"messages_400", "/v1/messages", "ant:se+fail-400", 400, "invalid_request_error"},
		{"chat_500", "/v1/chat/completions", "ant:se+fail-500", 502, "provider_error"},
		{"messages_500", "/v1/messages", "az:se+fail-500", 502, "provider_error"},
		{"chat_429", "/v1/chat/completions", "az:se+fail-429", 429, "rate_limit_error"},
		{"messages_401", "/v1/messages", "oai:se+fail-401", 502, "provider_error"},
		{"chat_unknown_model", "/v1/chat/completions", "nope", 404, "not_found_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body map[string]any
			if strings.Contains(tc.path, "messages") {
				body = messagesBody(tc.model, true)
			} else {
				body = chatBody(tc.model, true)
			}
			resp, raw := s.call(tc.path, body)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q for an error before the first byte", ct)
			}
			wantError(t, resp, raw, tc.status, tc.typ)
		})
	}
}

// testKeyLimits: the key-side rows of the error table on the model path.
func testKeyLimits(t *testing.T, s *suite) {
	t.Run("429_key_rpm", func(t *testing.T) {
		t.Parallel()
		k := s.newKey(map[string]any{"name": "rpm1", "rpm_limit": 1})["key"].(string)
		resp, raw := s.callKey(k, "/v1/chat/completions", chatBody("oai:rpm", false))
		wantStatus(t, resp, raw, 200)
		if resp.Header.Get("X-RateLimit-Limit") != "1" || resp.Header.Get("X-RateLimit-Remaining") != "0" || resp.Header.Get("X-RateLimit-Reset") == "" {
			t.Errorf("rate limit headers %v", resp.Header)
		}
		resp, raw = s.callKey(k, "/v1/chat/completions", chatBody("oai:rpm", false))
		_, details := wantError(t, resp, raw, 429, "rate_limit_error")
		if resp.Header.Get("X-RateLimit-Limit") != "1" || resp.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("429 without X-RateLimit headers: %v", resp.Header)
		}
		if details["scope"] != "key" || details["limit_type"] != "rpm" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("details %v Retry-After %q", details, resp.Header.Get("Retry-After"))
		}
		if s.up.Count("rpm") != 1 {
			t.Errorf("limited request reached the upstream")
		}
	})
	// X-RateLimit-* ride on every model-endpoint answer of a key with an RPM
	// limit, errors included.
	t.Run("ratelimit_headers_on_errors", func(t *testing.T) {
		t.Parallel()
		k := s.newKey(map[string]any{"name": "rpm100", "rpm_limit": 100})["key"].(string)
		for _, tc := range []struct {
			name, path string
			body       any
			status     int
		}{
			{"ok", "/v1/chat/completions", chatBody("oai:rlh", false), 200},
			{"stream", "/v1/messages", messagesBody("ant:rlh", true), 200},
			{"upstream_500", "/v1/chat/completions", chatBody("oai:rlh+fail-500", false), 502},
			{"upstream_400", "/v1/messages", messagesBody("ant:rlh+fail-400", false), 400},
			{"unknown_model", "/v1/chat/completions", chatBody("nope-rlh", false), 404},
			{"validation", "/v1/messages", map[string]any{"model": "oai:rlh", "messages": []any{}}, 400},
			{"bad_json", "/v1/chat/completions", "{", 400},
		} {
			resp, raw := s.callKey(k, tc.path, tc.body)
			wantStatus(t, resp, raw, tc.status)
			if resp.Header.Get("X-RateLimit-Limit") != "100" || resp.Header.Get("X-RateLimit-Remaining") == "" || resp.Header.Get("X-RateLimit-Reset") == "" {
				t.Errorf("%s: X-RateLimit headers missing: %v", tc.name, resp.Header)
			}
		}
	})

	// Requests refused before admission do not use up the RPM allowance.
	t.Run("refused_requests_not_counted", func(t *testing.T) {
		t.Parallel()
		k := s.newKey(map[string]any{"name": "rpm2", "rpm_limit": 2})["key"].(string)
		for range 4 {
			resp, raw := s.callKey(k, "/v1/chat/completions", chatBody("nope-rpm2", false))
			wantStatus(t, resp, raw, 404)
			if resp.Header.Get("X-RateLimit-Remaining") != "2" {
				t.Errorf("remaining %q before any admitted request, want 2", resp.Header.Get("X-RateLimit-Remaining"))
			}
		}
		for i := range 2 {
			resp, raw := s.callKey(k, "/v1/chat/completions", chatBody("oai:rpm2", false))
			wantStatus(t, resp, raw, 200)
			if want := []string{"1", "0"}[i]; resp.Header.Get("X-RateLimit-Remaining") != want {
				t.Errorf("remaining %q, want %s", resp.Header.Get("X-RateLimit-Remaining"), want)
			}
		}
		resp, raw := s.callKey(k, "/v1/chat/completions", chatBody("nope-rpm2", false))
		wantStatus(t, resp, raw, 404)
		if resp.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("remaining %q at the limit, want 0", resp.Header.Get("X-RateLimit-Remaining"))
		}
	})

	t.Run("402_key_budget", func(t *testing.T) {
		t.Parallel()
		s.alias(map[string]any{"alias": "pricey", "provider": "oai", "model": "pricey", "input_price_per_1k": 1000.0, "output_price_per_1k": 1000.0})
		k := s.newKey(map[string]any{"name": "poor", "budget_limit": 0.01})["key"].(string)
		resp, raw := s.callKey(k, "/v1/chat/completions", chatBody("pricey", false))
		_, details := wantError(t, resp, raw, 402, "budget_exceeded_error")
		if details["scope"] != "key" || details["budget_limit"] == nil || details["period_resets_at"] == nil {
			t.Errorf("details %v", details)
		}
		if s.up.Count("pricey") != 0 {
			t.Errorf("over-budget request reached the upstream")
		}
	})
	t.Run("405_wrong_method", func(t *testing.T) {
		t.Parallel()
		resp, raw := s.env.Do("GET", "/v1/chat/completions", nil, map[string]string{"Authorization": "Bearer " + s.key})
		wantError(t, resp, raw, 405, "invalid_request_error")
	})
	t.Run("413_body_too_large", func(t *testing.T) {
		t.Parallel()
		big := `{"model":"oai:big","messages":[{"role":"user","content":"` + strings.Repeat("a", 11<<20) + `"}]}`
		resp, raw := s.call("/v1/chat/completions", big)
		wantError(t, resp, raw, 413, "invalid_request_error")
	})
}
