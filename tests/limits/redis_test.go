package limits

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/tests/testenv"
)

// redisURL is a Redis database only these tests use; it is flushed at start.
const redisURL = "redis://127.0.0.1:6379/14"

func sharedRedis(t *testing.T) {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opts)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rc.Ping(ctx).Err(); err != nil {
		msg := "Redis not reachable at " + redisURL + ", skipping (" + err.Error() + ")"
		fmt.Println(msg)
		t.Skip(msg)
	}
	if err := rc.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("FLUSHDB: %v", err)
	}
}

// TestTwoInstancesShareLimits runs two gateways on one PostgreSQL database
// and one Redis: limits, budgets and key changes hold across both.
func TestTwoInstancesShareLimits(t *testing.T) {
	sharedRedis(t)
	cfg := freshDB(t, "postgres", func(c *config.Config) { c.Redis.URL = redisURL })
	a := start(t, cfg, nil)
	cfgB := *cfg
	b := start(t, &cfgB, nil)
	envs := []*testenv.Env{a, b}
	m := upstream(t)
	pricedAlias(t, a, m.URL())
	_, secret := key(t, a, map[string]any{"rpm_limit": 10})
	bid, bsecret := key(t, a, map[string]any{"budget_limit": 6.5})
	waitKnown(t, b, secret)
	waitKnown(t, b, bsecret)

	// Key rpm 10, 40 simultaneous requests alternating between the instances.
	rs := burst(40, func(i int) result { return chat(envs[i%2], secret, chatBody("m")) })
	got := countStatus(t, rs)
	per := [2]int{}
	for i, r := range rs {
		if r.status == 200 {
			per[i%2]++
		}
	}
	t.Logf("rpm 10 across two instances, 40 concurrent: %v (200s by instance A/B: %v)", got, per)
	if got[200] != 10 || got[429] != 30 {
		t.Errorf("statuses %v, want 10×200 and 30×429", got)
	}

	// Budget 6.5 (1.2 a call): 5 of 20 simultaneous calls, on both instances.
	rs = burst(20, func(i int) result { return chat(envs[i%2], bsecret, chatBody("m")) })
	got = countStatus(t, rs)
	t.Logf("budget 6.5 across two instances, 20 concurrent: %v", got)
	if got[200] != 5 || got[402] != 15 {
		t.Errorf("statuses %v, want 5×200 and 15×402", got)
	}
	for _, env := range envs {
		k := env.MustAdmin(200, "GET", "/admin/keys/"+bid, nil)
		if !near(num(k["current_spend"]), 5*callCost) {
			t.Errorf("%s: current_spend %v, want %v", env.BaseURL, k["current_spend"], 5*callCost)
		}
	}

	// Under-reserved calls (the prompt estimate is 24 tokens, the real
	// count 40): sequential calls alternating between the instances see each
	// other's spend, so the budget is passed by at most one call's
	// difference (actual 4.3 - reserved 2.7 = 1.6). Budget 8: 4.3, then
	// 4.3+2.7 = 7.0 fits (ending at 8.6), then refused.
	uid, usecret := key(t, a, map[string]any{"budget_limit": 8.0})
	waitKnown(t, b, usecret)
	long := chatBody("m")
	long["messages"] = []any{map[string]any{"role": "user", "content": strings.TrimSpace(strings.Repeat("a ", 40))}}
	n := 0
	var last result
	for ; n < 10; n++ {
		if last = chat(envs[n%2], usecret, long); last.status != 200 {
			break
		}
	}
	const actual, reserved = 43.0 / 1000 * price, 27.0 / 1000 * price
	spend := num(b.MustAdmin(200, "GET", "/admin/keys/"+uid, nil)["current_spend"])
	t.Logf("budget 8, reserve %.1f, cost %.1f, alternating instances: %d calls, spend %.2f", reserved, actual, n, spend)
	if n != 2 || last.status != 402 || !near(spend, 2*actual) || spend > 8+(actual-reserved)+1e-9 {
		t.Errorf("%d calls (last %d), spend %v; want 2 calls, then 402, spend %v", n, last.status, spend, 2*actual)
	}

	// A key disabled through A is refused by B within 1 s.
	id3, s3 := key(t, a, map[string]any{})
	waitKnown(t, b, s3)
	if r := chat(b, s3, chatBody("m")); r.status != 200 {
		t.Fatalf("new key on B: %d %s", r.status, r.body)
	}
	a.MustAdmin(200, "PUT", "/admin/keys/"+id3, map[string]any{"enabled": false})
	began := time.Now()
	for {
		r := chat(b, s3, chatBody("m"))
		if r.status == 403 {
			t.Logf("disabled key refused by instance B after %v", time.Since(began).Round(time.Millisecond))
			break
		}
		if r.status != 200 {
			t.Fatalf("instance B: %d %s", r.status, r.body)
		}
		if time.Since(began) > time.Second {
			t.Fatalf("instance B still accepts a key disabled on A after %v", time.Since(began))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitKnown waits until env accepts secret (created through another
// instance), probing with GET /v1/models, which spends nothing.
func waitKnown(t *testing.T, env *testenv.Env, secret string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		resp, raw := env.Do("GET", "/v1/models", nil, map[string]string{"Authorization": "Bearer " + secret})
		if resp.StatusCode == 200 {
			return
		}
		if resp.StatusCode != 401 || time.Now().After(deadline) {
			t.Fatalf("instance does not accept the new key: %d %s", resp.StatusCode, raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
