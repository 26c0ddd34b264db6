package limits

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
	p := fmt.Sprintf("gwtest:%s:limits:%d:", runID, prefixN.Add(1))
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

func TestRedis(t *testing.T) {
	testRedis(t)
	runSuite(t, func(t *testing.T, clock func() time.Time) Limiter {
		c := testRedis(t)
		return NewRedis(c, testPrefix(t, c), clock)
	})
}

// Two gateway instances (two clients, two limiters) sharing one Redis admit
// exactly the limit between them.
func TestRedisTwoInstancesExact(t *testing.T) {
	c1, c2 := testRedis(t), testRedis(t)
	prefix := testPrefix(t, c1)
	clk := newClock()
	l1 := NewRedis(c1, prefix, clk.Now)
	l2 := NewRedis(c2, prefix, clk.Now)
	ls := []Limiter{l1, l2}
	if got := concurrentReserve(t, ls, 60, []Rule{keyRule("k", 25, 0)}, 1); got != 25 {
		t.Fatalf("RPM: %d of 60 admitted across two instances, want exactly 25", got)
	}
	if got := concurrentReserve(t, ls, 60, []Rule{provRule("p", 0, 1000)}, 45); got != 22 {
		t.Fatalf("TPM: %d admitted across two instances, want exactly 22", got)
	}
	// A reservation made on one instance is settled and released on the other.
	r := mustReserve(t, l1, "shared", []Rule{keyRule("s", 1, 100)}, 100)
	if err := l2.Settle(context.Background(), r, 10); err != nil {
		t.Fatal(err)
	}
	mustDeny(t, l1, "x", []Rule{keyRule("s", 1, 100)}, 0)
	if err := l2.Release(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	mustReserve(t, l1, "y", []Rule{keyRule("s", 1, 100)}, 100)
}

func TestRedisKeysExpire(t *testing.T) {
	c := testRedis(t)
	prefix := testPrefix(t, c)
	l := NewRedis(c, prefix, nil)
	mustReserve(t, l, "a", []Rule{keyRule("ttl", 5, 0)}, 1)
	keys, _ := l.windows([]Rule{keyRule("ttl", 5, 0)})
	for _, k := range keys {
		ttl := c.PTTL(context.Background(), k).Val()
		if ttl <= Window || ttl > keyTTL {
			t.Errorf("%s TTL %v, want in (60s, 70s]", k, ttl)
		}
	}
}

func BenchmarkRedisReserveSettle(b *testing.B) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 15})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Skip("no Redis:", err)
	}
	prefix := "gwbench:" + runID + ":"
	defer func() { // the keys would expire in 70 s; do not leave them that long
		iter := c.Scan(context.Background(), 0, prefix+"*", 500).Iterator()
		for iter.Next(context.Background()) {
			c.Del(context.Background(), iter.Val())
		}
	}()
	l := NewRedis(c, prefix, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rules := []Rule{{Scope: ScopeKey, ID: fmt.Sprint("k", i%64), RPM: 1 << 30, TPM: 1 << 40}}
		r, _, d, err := l.Reserve(ctx, fmt.Sprint("r", i), rules, 100)
		if err != nil || d != nil {
			b.Fatal(d, err)
		}
		_ = l.Settle(ctx, r, 80)
	}
}
