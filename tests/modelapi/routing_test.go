package modelapi_test

import (
	"math"
	"sync"
	"testing"
)

func simple(alias, provider, model string) map[string]any {
	return map[string]any{"alias": alias, "provider": provider, "model": model}
}

func chain(alias string, targets ...[2]string) map[string]any {
	var c []any
	for _, t := range targets {
		c = append(c, map[string]any{"provider": t[0], "model": t[1]})
	}
	return map[string]any{"alias": alias, "routing_type": "fallback", "routing_config": map[string]any{"chain": c}}
}

func testRouting(t *testing.T, s *suite) {
	t.Run("load_balance_weights", func(t *testing.T) {
		t.Parallel()
		s.alias(map[string]any{"alias": "lb", "routing_type": "load_balance", "routing_config": map[string]any{"targets": []any{
			map[string]any{"provider": "oai", "model": "lb-a", "weight": 3},
			map[string]any{"provider": "oai2", "model": "lb-b", "weight": 1},
		}}})
		const n = 400
		var wg sync.WaitGroup
		jobs := make(chan struct{})
		var mu sync.Mutex
		byHeader := map[string]int{}
		for range 8 {
			wg.Go(func() {
				for range jobs {
					resp, raw := s.call("/v1/chat/completions", chatBody("lb", false))
					if resp.StatusCode != 200 {
						t.Errorf("status %d: %s", resp.StatusCode, raw)
						continue
					}
					mu.Lock()
					byHeader[resp.Header.Get("X-Gateway-Provider")+"/"+resp.Header.Get("X-Gateway-Model")]++
					mu.Unlock()
				}
			})
		}
		for range n {
			jobs <- struct{}{}
		}
		close(jobs)
		wg.Wait()
		a, b := s.up.Count("lb-a"), s.up.Count("lb-b")
		if a+b != n {
			t.Fatalf("upstream saw %d+%d requests, want %d", a, b, n)
		}
		if byHeader["oai/lb-a"] != a || byHeader["oai2/lb-b"] != b {
			t.Errorf("headers %v disagree with upstream counts %d/%d", byHeader, a, b)
		}
		if share := float64(a) / n; math.Abs(share-0.75) > 0.07 {
			t.Errorf("share of weight-3 target %.3f, want 0.75±0.07", share)
		}
	})

	t.Run("fallback_order", func(t *testing.T) {
		t.Parallel()
		s.alias(chain("fb", [2]string{"oai", "fb1+fail-500"}, [2]string{"ant", "fb2"}, [2]string{"oai2", "fb3"}))
		resp, raw := s.call("/v1/chat/completions", chatBody("fb", false))
		wantStatus(t, resp, raw, 200)
		if resp.Header.Get("X-Gateway-Provider") != "ant" || resp.Header.Get("X-Gateway-Model") != "fb2" {
			t.Errorf("served by %s/%s", resp.Header.Get("X-Gateway-Provider"), resp.Header.Get("X-Gateway-Model"))
		}
		if m := obj(t, raw); m["model"] != "fb" || path(m, "choices", 0, "message", "content") != "Hello from fb2" {
			t.Errorf("response %v", m)
		}
		if c1, c2, c3 := s.up.Count("fb1+fail-500"), s.up.Count("fb2"), s.up.Count("fb3"); c1 != 1 || c2 != 1 || c3 != 0 {
			t.Errorf("counts %d/%d/%d, want 1/1/0", c1, c2, c3)
		}
		var order []string
		for _, r := range s.up.Requests() {
			if r.Model == "fb1+fail-500" || r.Model == "fb2" {
				order = append(order, r.Model)
			}
		}
		if len(order) != 2 || order[0] != "fb1+fail-500" {
			t.Errorf("upstream order %v", order)
		}
	})

	t.Run("fallback_on_429_401_and_all_429", func(t *testing.T) {
		t.Parallel()
		s.alias(chain("fb429", [2]string{"oai", "f429+fail-429"}, [2]string{"az", "f401+fail-401"}, [2]string{"ant", "f-ok"}))
		resp, raw := s.call("/v1/chat/completions", chatBody("fb429", false))
		wantStatus(t, resp, raw, 200)
		if resp.Header.Get("X-Gateway-Provider") != "ant" || s.up.Count("f401+fail-401") != 1 || s.up.Count("f429+fail-429") < 1 {
			t.Errorf("served by %q; counts 429:%d 401:%d", resp.Header.Get("X-Gateway-Provider"), s.up.Count("f429+fail-429"), s.up.Count("f401+fail-401"))
		}
		s.alias(chain("all429", [2]string{"oai", "a429+fail-429"}, [2]string{"ant", "b429+fail-429"}))
		resp, raw = s.call("/v1/messages", messagesBody("all429", false))
		_, details := wantError(t, resp, raw, 429, "rate_limit_error")
		if details["scope"] != "provider" || resp.Header.Get("Retry-After") == "" || s.up.Count("b429+fail-429") == 0 {
			t.Errorf("details %v Retry-After %q", details, resp.Header.Get("Retry-After"))
		}
	})

	t.Run("load_balance_fails_over", func(t *testing.T) {
		t.Parallel()
		s.alias(map[string]any{"alias": "lbf", "routing_type": "load_balance", "routing_config": map[string]any{"targets": []any{
			map[string]any{"provider": "oai", "model": "lbf-bad+fail-500", "weight": 1},
			map[string]any{"provider": "oai2", "model": "lbf-ok", "weight": 1},
		}}})
		for range 20 {
			resp, raw := s.call("/v1/chat/completions", chatBody("lbf", false))
			wantStatus(t, resp, raw, 200)
		}
		if s.up.Count("lbf-ok") != 20 || s.up.Count("lbf-bad+fail-500") == 0 {
			t.Errorf("counts ok %d bad %d", s.up.Count("lbf-ok"), s.up.Count("lbf-bad+fail-500"))
		}
	})

	t.Run("client_error_no_fallback", func(t *testing.T) {
		t.Parallel()
		s.alias(chain("fb400", [2]string{"oai", "nf1+fail-400"}, [2]string{"oai2", "nf2"}))
		resp, raw := s.call("/v1/chat/completions", chatBody("fb400", false))
		wantError(t, resp, raw, 400, "invalid_request_error")
		if c1, c2 := s.up.Count("nf1+fail-400"), s.up.Count("nf2"); c1 != 1 || c2 != 0 {
			t.Errorf("counts %d/%d, want 1/0", c1, c2)
		}
	})

	t.Run("disabled_provider_skipped", func(t *testing.T) {
		t.Parallel()
		s.provider("oai-off", "openai")
		s.env.MustAdmin(200, "PUT", "/admin/providers/"+providerID(t, s, "oai-off"), map[string]any{"enabled": false})
		s.alias(chain("fboff", [2]string{"oai-off", "off1"}, [2]string{"oai", "off2"}))
		resp, raw := s.call("/v1/chat/completions", chatBody("fboff", false))
		wantStatus(t, resp, raw, 200)
		if resp.Header.Get("X-Gateway-Provider") != "oai" {
			t.Errorf("served by %q", resp.Header.Get("X-Gateway-Provider"))
		}
		if c1, c2 := s.up.Count("off1"), s.up.Count("off2"); c1 != 0 || c2 != 1 {
			t.Errorf("counts %d/%d, want 0/1", c1, c2)
		}
		// A simple alias on the disabled provider: 503.
		s.alias(simple("simple-off", "oai-off", "off3"))
		resp, raw = s.call("/v1/chat/completions", chatBody("simple-off", false))
		wantError(t, resp, raw, 503, "service_unavailable")
		if s.up.Count("off3") != 0 {
			t.Errorf("disabled provider was called")
		}
	})

	t.Run("provider_model_form", func(t *testing.T) {
		t.Parallel()
		// The upstream model may itself contain ':' and '/': split at the first ':'.
		resp, raw := s.call("/v1/chat/completions", chatBody("oai:org/pm:v1", false))
		wantStatus(t, resp, raw, 200)
		if resp.Header.Get("X-Gateway-Provider") != "oai" || resp.Header.Get("X-Gateway-Model") != "org/pm:v1" {
			t.Errorf("served by %s/%s", resp.Header.Get("X-Gateway-Provider"), resp.Header.Get("X-Gateway-Model"))
		}
		if m := obj(t, raw); m["model"] != "oai:org/pm:v1" {
			t.Errorf("model %v", m["model"])
		}
		if s.up.Count("org/pm:v1") != 1 {
			t.Errorf("upstream did not get model org/pm:v1")
		}
	})

	// api_base with a trailing slash, and the type inferred from the name.
	t.Run("api_base_and_type_inference", func(t *testing.T) {
		t.Parallel()
		u := s.up.URL()
		for _, p := range []map[string]any{
			{"name": "slash-oai", "type": "openai", "api_base": u + "/v1/", "api_key": "sk-up"},
			{"name": "slash-ant", "type": "anthropic", "api_base": u + "/", "api_key": "sk-up"},
			{"name": "slash-az", "type": "azure", "api_base": u + "/", "api_key": "sk-up", "api_version": "2024-10-21"},
			{"name": "my-anthropic", "api_base": u, "api_key": "sk-up"},
			{"name": "my-azure", "api_base": u, "api_key": "sk-up", "api_version": "2024-10-21"},
		} {
			s.env.MustAdmin(201, "POST", "/admin/providers", p)
		}
		for _, tc := range []struct{ provider, model, path string }{
			{"slash-oai", "ab-1", "/v1/chat/completions"},
			{"slash-ant", "ab-2", "/v1/messages"},
			{"slash-az", "ab-3", "/openai/deployments/ab-3/chat/completions"},
			{"my-anthropic", "ab-4", "/v1/messages"},
			{"my-azure", "ab-5", "/openai/deployments/ab-5/chat/completions"},
		} {
			resp, raw := s.call("/v1/chat/completions", chatBody(tc.provider+":"+tc.model, false))
			wantStatus(t, resp, raw, 200)
			if r := s.up.one(t, tc.model); r.Path != tc.path {
				t.Errorf("%s: upstream path %q, want %q", tc.provider, r.Path, tc.path)
			}
		}
	})

	t.Run("unknown_model", func(t *testing.T) {
		t.Parallel()
		for _, m := range []string{"no-such-alias", "nosuchprovider:gpt-4o"} {
			resp, raw := s.call("/v1/chat/completions", chatBody(m, false))
			wantError(t, resp, raw, 404, "not_found_error")
		}
	})

	t.Run("allowed_models", func(t *testing.T) {
		t.Parallel()
		s.alias(simple("am-yes", "oai", "am-yes"))
		s.alias(simple("am-no", "oai", "am-no"))
		k := s.newKey(map[string]any{"name": "restricted", "allowed_models": []any{"am-yes", "oai:am-direct"}})["key"].(string)
		for _, tc := range []struct {
			model  string
			status int
		}{{"am-yes", 200}, {"oai:am-direct", 200}, {"am-no", 403}, {"oai:am-yes", 403}} {
			resp, raw := s.callKey(k, "/v1/chat/completions", chatBody(tc.model, false))
			if tc.status == 403 {
				wantError(t, resp, raw, 403, "permission_error")
			} else {
				wantStatus(t, resp, raw, 200)
			}
		}
		if s.up.Count("am-no") != 0 {
			t.Errorf("forbidden model reached the upstream")
		}
	})
}

func providerID(t *testing.T, s *suite, name string) string {
	t.Helper()
	_, raw := s.env.Admin("GET", "/admin/providers?page_size=100", nil)
	for _, p := range obj(t, raw)["data"].([]any) {
		if path(p, "name") == name {
			return str(path(p, "id"))
		}
	}
	t.Fatalf("provider %q not found", name)
	return ""
}
