package budget

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testRedis connects to GATEWAY_TEST_REDIS_URL (default DB 15 of the local
// Redis) with a fresh client, or skips the test when nobody answers.
func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("GATEWAY_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/15"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		fmt.Printf("NOTICE: Redis at %s unreachable (%v); skipping Redis tests\n", url, err)
		t.Skipf("Redis at %s unreachable: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var (
	runID    = fmt.Sprintf("%d", time.Now().UnixNano())
	prefixes sync.Map // *testing.T → prefix
	prefixN  atomic.Int64
)

// testPrefix is unique per test (and per run of it, with -count), and the
// same for every call within one test, so two instances built in one test
// share their keys; the keys are deleted when the test ends.
func testPrefix(t *testing.T, c *redis.Client) string {
	if p, ok := prefixes.Load(t); ok {
		return p.(string)
	}
	p := fmt.Sprintf("gwtest:%s:budget:%d:", runID, prefixN.Add(1))
	prefixes.Store(t, p)
	t.Cleanup(func() {
		prefixes.Delete(t)
		ctx := context.Background()
		iter := c.Scan(ctx, 0, p+"*", 500).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return p
}

func TestRedisTracker(t *testing.T) {
	testRedis(t)
	runSuite(t, func(t *testing.T, load SpendLoader, clock func() time.Time) Tracker {
		c := testRedis(t)
		return NewRedis(c, testPrefix(t, c), load, clock)
	})
}

// Two gateway instances sharing one Redis hold one budget between them.
func TestRedisTwoInstances(t *testing.T) {
	ctx := context.Background()
	c1, c2 := testRedis(t), testRedis(t)
	prefix := testPrefix(t, c1)
	ld := newLoader()
	ld.spend["key/loaded"] = 0.7
	clk := newClock()
	a := NewRedis(c1, prefix, ld.load, clk.Now)
	b := NewRedis(c2, prefix, ld.load, clk.Now)
	both := []Tracker{a, b}

	if got := concurrentReserve(t, both, 30, []Scope{keyScope("k", 1, Daily)}, 0.1); got != 10 {
		t.Fatalf("%d admitted across two instances, want exactly 10", got)
	}
	// Both instances may load the counter at once; SET NX keeps one value.
	if got := concurrentReserve(t, both, 30, []Scope{keyScope("loaded", 1, Monthly)}, 0.1); got != 3 {
		t.Fatalf("%d admitted after loading 0.7 on two instances, want exactly 3", got)
	}

	// Settled concurrently from both instances: charged once.
	mustReserve(t, a, "once", []Scope{keyScope("s", 10, Daily)}, 1)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := both[i%2].Settle(ctx, "once", 0.4); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	wantSpend(t, b, "s", Daily, 0.4)
}

func TestRedisTrackerKeys(t *testing.T) {
	ctx := context.Background()
	c := testRedis(t)
	prefix := testPrefix(t, c)
	clk := newClock()
	tr := NewRedis(c, prefix, newLoader().load, clk.Now)
	mustReserve(t, tr, "r", []Scope{keyScope("k", 1, Daily), {Kind: KindProject, ID: "p", Period: Total}}, 0.1)
	day := tr.base(KindKey, "k", Daily, PeriodStart(Daily, t0))
	if ttl := c.TTL(ctx, day+":s").Val(); ttl <= 12*time.Hour || ttl > 36*time.Hour {
		t.Errorf("daily counter TTL %v, want period end + 24h (36h at noon)", ttl)
	}
	if ttl := c.TTL(ctx, tr.base(KindProject, "p", Total, time.Time{})+":s").Val(); ttl != -1 {
		t.Errorf("total counter TTL %v, want none", ttl)
	}
	if ttl := c.TTL(ctx, day+":h").Val(); ttl <= 0 || ttl > DefaultReservationTTL {
		t.Errorf("holds TTL %v", ttl)
	}
	mustSettle(t, tr, "r", 0.05)
	if v := c.Get(ctx, tr.reqKey("r")).Val(); v != settledMark {
		t.Errorf("request record after settle %q", v)
	}
	if n := c.HLen(ctx, day+":h").Val(); n != 1 { // only "sum" remains
		t.Errorf("holds hash has %d fields after settle", n)
	}
}
