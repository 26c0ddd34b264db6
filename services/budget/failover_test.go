package budget

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmgw/gateway/services/apierr"
)

type stateLog struct {
	mu     sync.Mutex
	states []bool
}

func (s *stateLog) record(up bool, _ error) {
	s.mu.Lock()
	s.states = append(s.states, up)
	s.mu.Unlock()
}
func (s *stateLog) get() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.states...)
}

func deadRedis(t *testing.T, load SpendLoader) *RedisTracker {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return NewRedis(c, "gwtest:", load, nil)
}

func TestFailoverUnreachableRedis(t *testing.T) {
	ctx := context.Background()
	s := []Scope{keyScope("k", 1, Daily)}

	t.Run("fail open tracks in memory", func(t *testing.T) {
		ld := newLoader()
		ld.spend["key/k"] = 0.5
		var log stateLog
		f := NewFailover(deadRedis(t, ld.load), NewMemory(ld.load, nil), true, log.record, nil)
		mustReserve(t, f, "a", s, 0.3)
		mustSettle(t, f, "a", 0.3)
		mustRefuse(t, f, "b", s, 0.3) // 0.5 loaded + 0.3
		if sp, err := f.Spend(ctx, KindKey, "k", Daily); err != nil || sp != 0.8 {
			t.Fatalf("spend %v %v", sp, err)
		}
		if got := log.get(); len(got) != 1 || got[0] || f.Up() {
			t.Fatalf("state changes %v, want one [down]", got)
		}
	})

	t.Run("fail closed refuses with 503", func(t *testing.T) {
		var log stateLog
		f := NewFailover(deadRedis(t, nil), nil, false, log.record, nil)
		for range 3 {
			err := f.Reserve(ctx, "a", s, 0.1)
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Type != apierr.TypeUnavailable {
				t.Fatalf("got %v, want 503 service_unavailable", err)
			}
		}
		if _, err := f.Spend(ctx, KindKey, "k", Daily); apierr.From(err).Status != http.StatusServiceUnavailable {
			t.Fatalf("spend: %v", err)
		}
		if got := log.get(); len(got) != 1 {
			t.Fatalf("state changes %v, want one", got)
		}
	})
}

// flakyTracker is a primary that fails on demand.
type flakyTracker struct {
	*MemoryTracker
	fail  atomic.Bool
	calls atomic.Int64
}

func (f *flakyTracker) Reserve(ctx context.Context, id string, s []Scope, est float64) error {
	f.calls.Add(1)
	if f.fail.Load() {
		return errors.New("dial tcp: connection refused")
	}
	return f.MemoryTracker.Reserve(ctx, id, s, est)
}

func TestFailoverProbesAndRecovers(t *testing.T) {
	clk := newClock()
	primary := &flakyTracker{MemoryTracker: NewMemory(nil, clk.Now)}
	var log stateLog
	f := NewFailover(primary, NewMemory(nil, clk.Now), true, log.record, clk.Now)
	s := []Scope{keyScope("k", 0.25, Daily)}

	mustReserve(t, f, "p1", s, 0.1)
	mustReserve(t, f, "p2", s, 0.1)
	mustRefuse(t, f, "p3", s, 0.1) // a 402 is an answer, not an outage
	if !f.Up() {
		t.Fatal("a 402 must not mark the primary down")
	}
	primary.fail.Store(true)
	mustReserve(t, f, "m1", s, 0.1) // local tracker: its own budget
	mustReserve(t, f, "m2", s, 0.1)
	mustSettle(t, f, "m1", 0.05) // settled where it was reserved
	if n := primary.calls.Load(); n != 4 {
		t.Fatalf("primary called %d times, want 4 (no probe within the second)", n)
	}
	if err := f.Settle(context.Background(), "p1", 0.1); err == nil {
		t.Error("settling a primary reservation while it is down must report the uncharged cost")
	}
	primary.fail.Store(false)
	clk.Set(t0.Add(time.Second))
	mustRefuse(t, f, "back", s, 0.1) // the probe reaches the primary, which still holds p1, p2
	if !f.Up() {
		t.Fatal("a successful probe must switch back")
	}
	mustSettle(t, f, "p1", 0.1)
	if got := log.get(); len(got) != 2 || got[0] || !got[1] {
		t.Fatalf("state changes %v, want [down up]", got)
	}
}
