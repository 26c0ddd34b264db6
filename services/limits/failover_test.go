package limits

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

// stateLog records onState calls.
type stateLog struct {
	mu     sync.Mutex
	states []bool
}

func (s *stateLog) record(up bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !up && err == nil {
		panic("a down transition must carry its error")
	}
	s.states = append(s.states, up)
}

func (s *stateLog) get() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.states...)
}

func deadRedis(t *testing.T) *Redis {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return NewRedis(c, "gwtest:", nil)
}

func TestFailoverUnreachableRedis(t *testing.T) {
	ctx := context.Background()
	rules := []Rule{keyRule("k", 2, 0)}

	t.Run("fail open limits in memory", func(t *testing.T) {
		var log stateLog
		f := NewFailover(deadRedis(t), nil, true, log.record, nil)
		a := mustReserve(t, f, "a", rules, 0)
		mustReserve(t, f, "b", rules, 0)
		if d := mustDeny(t, f, "c", rules, 0); d.Limit != 2 {
			t.Fatalf("denial %+v", d)
		}
		if err := f.Release(ctx, a); err != nil { // goes to the memory limiter
			t.Fatal(err)
		}
		mustReserve(t, f, "c", rules, 0)
		if d, err := f.Peek(ctx, rules, 0); err != nil || d == nil {
			t.Fatalf("peek: %v %v", d, err)
		}
		if got := log.get(); len(got) != 1 || got[0] {
			t.Fatalf("state changes %v, want one [down]", got)
		}
		if f.Up() {
			t.Fatal("Up() with Redis unreachable")
		}
	})

	t.Run("fail closed refuses with 503", func(t *testing.T) {
		var log stateLog
		f := NewFailover(deadRedis(t), nil, false, log.record, nil)
		for range 3 {
			_, _, d, err := f.Reserve(ctx, "a", rules, 0)
			var ae *apierr.Error
			if d != nil || !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Type != apierr.TypeUnavailable {
				t.Fatalf("got %v %v, want 503 service_unavailable", d, err)
			}
		}
		if _, err := f.Peek(ctx, rules, 0); apierr.From(err).Status != http.StatusServiceUnavailable {
			t.Fatalf("peek: %v", err)
		}
		if got := log.get(); len(got) != 1 {
			t.Fatalf("state changes %v, want one", got)
		}
	})
}

// flakyLimiter is a primary that fails on demand.
type flakyLimiter struct {
	*Memory
	fail  atomic.Bool
	calls atomic.Int64
}

var errDown = errors.New("dial tcp: connection refused")

func (l *flakyLimiter) Reserve(ctx context.Context, id string, rules []Rule, tokens int64) (Reservation, []Status, *Denial, error) {
	l.calls.Add(1)
	if l.fail.Load() {
		return Reservation{}, nil, nil, errDown
	}
	return l.Memory.Reserve(ctx, id, rules, tokens)
}

func TestFailoverProbesAndRecovers(t *testing.T) {
	clk := newClock()
	primary := &flakyLimiter{Memory: NewMemory(clk.Now)}
	var log stateLog
	f := NewFailover(primary, nil, true, log.record, clk.Now)
	rules := []Rule{keyRule("k", 100, 0)}

	mustReserve(t, f, "up-1", rules, 0)
	primary.fail.Store(true)
	for i := range 10 { // the first call fails over; the rest within the second skip Redis
		r := mustReserve(t, f, "down-"+string(rune('a'+i)), rules, 0)
		if !r.local {
			t.Fatal("reservation while down must be local")
		}
	}
	if n := primary.calls.Load(); n != 2 {
		t.Fatalf("primary called %d times, want 2 (one success, one failure, no probe yet)", n)
	}
	clk.Set(t0.Add(time.Second))
	mustReserve(t, f, "probe-fails", rules, 0)
	mustReserve(t, f, "no-probe", rules, 0)
	if n := primary.calls.Load(); n != 3 {
		t.Fatalf("primary called %d times, want 3 (one probe per second)", n)
	}
	primary.fail.Store(false)
	clk.Set(t0.Add(2 * time.Second))
	r := mustReserve(t, f, "back", rules, 0)
	if r.local || !f.Up() {
		t.Fatal("the successful probe must switch back to the primary")
	}
	if got := log.get(); len(got) != 2 || got[0] || !got[1] {
		t.Fatalf("state changes %v, want [down up]", got)
	}
}

func TestFailoverUsesRedisWhileUp(t *testing.T) {
	c := testRedis(t)
	var log stateLog
	f := NewFailover(NewRedis(c, testPrefix(t, c), nil), nil, false, log.record, nil)
	rules := []Rule{keyRule("k", 3, 0)}
	if got := concurrentReserve(t, []Limiter{f}, 10, rules, 0); got != 3 {
		t.Fatalf("%d admitted, want 3", got)
	}
	if len(log.get()) != 0 || !f.Up() {
		t.Fatal("no state change expected")
	}
}
