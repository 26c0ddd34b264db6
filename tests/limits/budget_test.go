package limits

import (
	"testing"
	"time"

	"github.com/llmgw/gateway/tests/testenv"
)

func pricedAlias(t *testing.T, env *testenv.Env, url string) {
	t.Helper()
	provider(t, env, "mock", url, nil)
	alias(t, env, map[string]any{"alias": "m", "provider": "mock", "model": "gpt-x",
		"input_price_per_1k": price, "output_price_per_1k": price})
}

// spendUntilRefused sends sequential calls until one is refused (at most
// max) and returns how many succeeded and the refusal.
func spendUntilRefused(t *testing.T, env *testenv.Env, secret string, max int) (int, result) {
	t.Helper()
	for i := 0; i < max; i++ {
		r := chat(env, secret, chatBody("m"))
		if r.status != 200 {
			return i, r
		}
	}
	return max, result{}
}

func check402(t *testing.T, r result, scope string, limit, spend float64) {
	t.Helper()
	if r.status != 402 {
		t.Fatalf("status %d, want 402: %s", r.status, r.body)
	}
	d := errDetails(t, r, "budget_exceeded_error")
	if d["scope"] != scope || !near(num(d["budget_limit"]), limit) || !near(num(d["current_spend"]), spend) {
		t.Errorf("402 details %v, want scope %s limit %v spend %v", d, scope, limit, spend)
	}
	if v, ok := d["period_resets_at"]; !ok {
		t.Errorf("no period_resets_at: %v", d)
	} else if v != nil { // null for a "total" budget, which never resets
		ts, _ := v.(string)
		if _, err := time.Parse(time.RFC3339, ts); err != nil {
			t.Errorf("period_resets_at %v", v)
		}
	}
}

func TestKeyAndProjectBudgets(t *testing.T) {
	forEachDB(t, func(t *testing.T, driver string) {
		env := start(t, freshDB(t, driver), nil)
		pricedAlias(t, env, upstream(t).URL())

		// Key budget 5.5: 4 calls of 1.2 (4.8); the 5th would reach 6.0.
		kid, secret := key(t, env, map[string]any{"budget_limit": 5.5, "budget_period": "daily"})
		n, r := spendUntilRefused(t, env, secret, 10)
		t.Logf("key budget 5.5, cost 1.2/call: %d succeeded", n)
		if n != 4 {
			t.Fatalf("%d calls succeeded, want 4", n)
		}
		check402(t, r, "key", 5.5, 4*callCost)
		k := env.MustAdmin(200, "GET", "/admin/keys/"+kid, nil)
		if !near(num(k["current_spend"]), 4*callCost) {
			t.Errorf("key current_spend %v, want %v", k["current_spend"], 4*callCost)
		}
		// Still refused (no reservation leaked by the refusal).
		if r := chat(env, secret, chatBody("m")); r.status != 402 {
			t.Errorf("again: %d", r.status)
		}

		// Project budget 3.0 shared by two keys: 2 calls (2.4), the third refused for either key.
		p := env.MustAdmin(201, "POST", "/admin/projects", map[string]any{"name": "p", "budget_limit": 3.0, "budget_period": "monthly"})
		pid := p["id"].(string)
		_, s1 := key(t, env, map[string]any{"project_id": pid})
		_, s2 := key(t, env, map[string]any{"project_id": pid})
		for i, s := range []string{s1, s2} {
			if r := chat(env, s, chatBody("m")); r.status != 200 {
				t.Fatalf("project call %d: %d %s", i, r.status, r.body)
			}
		}
		for _, s := range []string{s1, s2} {
			check402(t, chat(env, s, chatBody("m")), "project", 3.0, 2*callCost)
		}
		p = env.MustAdmin(200, "GET", "/admin/projects/"+pid, nil)
		if !near(num(p["current_spend"]), 2*callCost) {
			t.Errorf("project current_spend %v, want %v", p["current_spend"], 2*callCost)
		}

		// Concurrent: budget 6.5 admits exactly 5 of 20 simultaneous calls
		// (reservation = real cost, so no overshoot).
		kid3, s3 := key(t, env, map[string]any{"budget_limit": 6.5})
		rs := burst(20, func(int) result { return chat(env, s3, chatBody("m")) })
		got := countStatus(t, rs)
		t.Logf("key budget 6.5, 20 concurrent: %v", got)
		if got[200] != 5 || got[402] != 15 {
			t.Errorf("statuses %v, want 5×200 and 15×402", got)
		}
		k = env.MustAdmin(200, "GET", "/admin/keys/"+kid3, nil)
		if !near(num(k["current_spend"]), 5*callCost) {
			t.Errorf("key current_spend %v, want %v", k["current_spend"], 5*callCost)
		}
	})
}

func TestDailyBudgetRollsOverAtUTCMidnight(t *testing.T) {
	forEachDB(t, func(t *testing.T, driver string) {
		clk := &clock{t: time.Date(2026, 11, 22, 23, 58, 0, 0, time.UTC)}
		env := start(t, freshDB(t, driver), clk.Now)
		pricedAlias(t, env, upstream(t).URL())
		kid, secret := key(t, env, map[string]any{"budget_limit": 2.0, "budget_period": "daily"})
		if r := chat(env, secret, chatBody("m")); r.status != 200 {
			t.Fatalf("first call: %d %s", r.status, r.body)
		}
		r := chat(env, secret, chatBody("m"))
		check402(t, r, "key", 2.0, callCost)
		_, _, d := testenv.ErrorOf(t, r.body)
		if d["period_resets_at"] != "2026-11-23T00:00:00Z" {
			t.Errorf("period_resets_at %v, want 2026-11-23T00:00:00Z", d["period_resets_at"])
		}
		clk.Set(time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC))
		if r := chat(env, secret, chatBody("m")); r.status != 402 {
			t.Errorf("one second before midnight: %d", r.status)
		}
		clk.Set(time.Date(2026, 11, 23, 0, 0, 1, 0, time.UTC))
		if r := chat(env, secret, chatBody("m")); r.status != 200 {
			t.Fatalf("after midnight: %d %s", r.status, r.body)
		}
		k := env.MustAdmin(200, "GET", "/admin/keys/"+kid, nil)
		if !near(num(k["current_spend"]), callCost) {
			t.Errorf("current_spend after roll-over %v, want %v", k["current_spend"], callCost)
		}
		if r := chat(env, secret, chatBody("m")); r.status != 402 {
			t.Errorf("second call of the new day: %d", r.status)
		}
	})
}

func TestRestartKeepsSpend(t *testing.T) {
	forEachDB(t, func(t *testing.T, driver string) {
		cfg := freshDB(t, driver)
		m := upstream(t)
		env := start(t, cfg, nil)
		pricedAlias(t, env, m.URL())
		kid, secret := key(t, env, map[string]any{"budget_limit": 5.5, "budget_period": "daily"})
		p := env.MustAdmin(201, "POST", "/admin/projects", map[string]any{"name": "p", "budget_limit": 4.0, "budget_period": "total"})
		pid := p["id"].(string)
		_, ps := key(t, env, map[string]any{"project_id": pid})
		for i := 0; i < 2; i++ {
			if r := chat(env, secret, chatBody("m")); r.status != 200 {
				t.Fatalf("call %d: %d %s", i, r.status, r.body)
			}
			if r := chat(env, ps, chatBody("m")); r.status != 200 {
				t.Fatalf("project call %d: %d %s", i, r.status, r.body)
			}
		}
		stop(t, env)

		env2 := start(t, cfg, nil)
		k := env2.MustAdmin(200, "GET", "/admin/keys/"+kid, nil)
		if !near(num(k["current_spend"]), 2*callCost) {
			t.Errorf("after restart current_spend %v, want %v", k["current_spend"], 2*callCost)
		}
		n, r := spendUntilRefused(t, env2, secret, 10)
		t.Logf("after restart (2 of 4 calls spent): %d more succeeded", n)
		if n != 2 {
			t.Errorf("%d calls succeeded after restart, want 2", n)
		}
		check402(t, r, "key", 5.5, 4*callCost)
		n, r = spendUntilRefused(t, env2, ps, 10)
		if n != 1 {
			t.Errorf("project: %d calls succeeded after restart, want 1", n)
		}
		check402(t, r, "project", 4.0, 3*callCost)
		_, _, d := testenv.ErrorOf(t, r.body)
		if d["period_resets_at"] != nil {
			t.Errorf("total budget period_resets_at %v, want null", d["period_resets_at"])
		}
	})
}
