package limits

import (
	"strconv"
	"testing"
	"time"
)

func TestKeyRPMExactUnderConcurrency(t *testing.T) {
	forEachDB(t, func(t *testing.T, driver string) {
		env := start(t, freshDB(t, driver), nil)
		m := upstream(t)
		provider(t, env, "mock", m.URL(), nil)
		alias(t, env, map[string]any{"alias": "m", "provider": "mock", "model": "gpt-x"})
		_, secret := key(t, env, map[string]any{"rpm_limit": 10})

		rs := burst(40, func(int) result { return chat(env, secret, chatBody("m")) })
		got := countStatus(t, rs)
		t.Logf("rpm 10, 40 concurrent: %v", got)
		if got[200] != 10 || got[429] != 30 {
			t.Fatalf("statuses %v, want 10×200 and 30×429", got)
		}
		now := time.Now()
		for _, r := range rs {
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
				if r.header.Get(h) == "" {
					t.Errorf("status %d: no %s header", r.status, h)
				}
			}
			if r.header.Get("X-RateLimit-Limit") != "10" {
				t.Errorf("X-RateLimit-Limit %q", r.header.Get("X-RateLimit-Limit"))
			}
			reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
			if err != nil || reset < now.Unix()-1 || reset > now.Add(61*time.Second).Unix() {
				t.Errorf("X-RateLimit-Reset %q not a Unix time within the next minute", r.header.Get("X-RateLimit-Reset"))
			}
			if r.status != 429 {
				continue
			}
			if r.header.Get("X-RateLimit-Remaining") != "0" {
				t.Errorf("429 remaining %q", r.header.Get("X-RateLimit-Remaining"))
			}
			ra, err := strconv.Atoi(r.header.Get("Retry-After"))
			if err != nil || ra < 1 || ra > 60 {
				t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
			}
			d := errDetails(t, r, "rate_limit_error")
			if num(d["limit"]) != 10 || num(d["remaining"]) != 0 || d["scope"] != "key" || d["limit_type"] != "rpm" {
				t.Errorf("429 details %v", d)
			}
			ts, ok := d["reset_at"].(string)
			if _, err := time.Parse(time.RFC3339, ts); !ok || err != nil {
				t.Errorf("reset_at %v not RFC 3339", d["reset_at"])
			}
		}
		// The remaining counts of the 200s are 9..0, each once.
		seen := map[string]int{}
		for _, r := range rs {
			if r.status == 200 {
				seen[r.header.Get("X-RateLimit-Remaining")]++
			}
		}
		for i := 0; i < 10; i++ {
			if seen[strconv.Itoa(i)] != 1 {
				t.Errorf("200s remaining values %v, want 0..9 once each", seen)
				break
			}
		}
	})
}

func TestKeyTPMExactUnderConcurrency(t *testing.T) {
	forEachDB(t, func(t *testing.T, driver string) {
		env := start(t, freshDB(t, driver), nil)
		m := upstream(t)
		provider(t, env, "mock", m.URL(), nil)
		alias(t, env, map[string]any{"alias": "m", "provider": "mock", "model": "gpt-x"})
		// Each request reserves 12 tokens (= its real usage): 66 admits 5.
		_, secret := key(t, env, map[string]any{"tpm_limit": 66})
		rs := burst(20, func(int) result { return chat(env, secret, chatBody("m")) })
		got := countStatus(t, rs)
		t.Logf("tpm 66 (12/request), 20 concurrent: %v", got)
		if got[200] != 5 || got[429] != 15 {
			t.Fatalf("statuses %v, want 5×200 and 15×429", got)
		}
		for _, r := range rs {
			if r.status != 429 {
				continue
			}
			d := errDetails(t, r, "rate_limit_error")
			if num(d["limit"]) != 66 || d["scope"] != "key" || d["limit_type"] != "tpm" {
				t.Errorf("429 details %v", d)
			}
			if r.header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		}
		// Reservations are corrected by the real usage: max_tokens 100
		// reserves 109 tokens but uses 12, so tpm 300 admits 16 sequential
		// calls (12×15+109 = 289 fits, 12×16+109 = 301 does not).
		_, secret3 := key(t, env, map[string]any{"tpm_limit": 300})
		wide := chatBody("m")
		wide["max_tokens"] = 100
		n := 0
		for ; n < 30; n++ {
			if r := chat(env, secret3, wide); r.status != 200 {
				if r.status != 429 {
					t.Fatalf("call %d: %d %s", n, r.status, r.body)
				}
				break
			}
		}
		t.Logf("tpm 300, reserve 109, use 12: %d sequential calls succeeded", n)
		if n != 16 {
			t.Errorf("%d calls succeeded, want 16", n)
		}

		// A request whose max_tokens alone exceeds what is left is refused.
		big := chatBody("m")
		big["max_tokens"] = 1000
		_, secret2 := key(t, env, map[string]any{"tpm_limit": 500})
		if r := chat(env, secret2, big); r.status != 429 {
			t.Errorf("max_tokens 1000 against tpm 500: %d %s", r.status, r.body)
		}
	})
}

func TestProviderRPM(t *testing.T) {
	env := start(t, freshDB(t, "sqlite"), nil)
	m := upstream(t)
	provider(t, env, "pa", m.URL(), map[string]any{"rpm_limit": 2})
	provider(t, env, "pb", m.URL(), nil)
	alias(t, env, map[string]any{"alias": "fb", "routing_type": "fallback",
		"routing_config": map[string]any{"chain": []any{
			map[string]any{"provider": "pa", "model": "gpt-x"},
			map[string]any{"provider": "pb", "model": "gpt-x"}}}})
	alias(t, env, map[string]any{"alias": "lb", "routing_type": "load_balance",
		"routing_config": map[string]any{"targets": []any{
			map[string]any{"provider": "pa", "model": "gpt-x", "weight": 1000},
			map[string]any{"provider": "pb", "model": "gpt-x", "weight": 1}}}})
	alias(t, env, map[string]any{"alias": "only-a", "provider": "pa", "model": "gpt-x"})
	_, secret := key(t, env, map[string]any{})

	var served []string
	for i := 0; i < 6; i++ {
		r := chat(env, secret, chatBody("fb"))
		if r.status != 200 {
			t.Fatalf("fallback call %d: %d %s", i, r.status, r.body)
		}
		served = append(served, r.header.Get("X-Gateway-Provider"))
	}
	t.Logf("fallback over pa(rpm 2), pb: %v", served)
	for i, p := range served {
		want := "pb"
		if i < 2 {
			want = "pa"
		}
		if p != want {
			t.Errorf("call %d served by %q, want %q (all: %v)", i, p, want, served)
		}
	}
	// load_balance: pa is full, so every call goes to pb.
	for i := 0; i < 4; i++ {
		r := chat(env, secret, chatBody("lb"))
		if r.status != 200 || r.header.Get("X-Gateway-Provider") != "pb" {
			t.Errorf("load_balance call %d: %d by %q %s", i, r.status, r.header.Get("X-Gateway-Provider"), r.body)
		}
	}
	// The mock saw exactly 2 calls through pa: no call was sent to pa and refused.
	if n := m.Total(); n != 10 {
		t.Errorf("upstream saw %d calls, want 10", n)
	}
	r := chat(env, secret, chatBody("only-a"))
	if r.status != 429 {
		t.Fatalf("simple alias on full provider: %d %s", r.status, r.body)
	}
	d := errDetails(t, r, "rate_limit_error")
	if d["scope"] != "provider" || d["limit_type"] != "rpm" {
		t.Errorf("provider 429 details %v", d)
	}
	if r.header.Get("Retry-After") == "" {
		t.Error("provider 429 without Retry-After")
	}
}
