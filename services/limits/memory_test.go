package limits

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestMemory(t *testing.T) {
	runSuite(t, func(t *testing.T, clock func() time.Time) Limiter { return NewMemory(clock) })
}

func TestMemoryUnlimitedRulesKeepNoState(t *testing.T) {
	m := NewMemory(newClock().Now)
	mustReserve(t, m, "a", []Rule{keyRule("free", 0, 0), provRule("p", 0, 0)}, 10)
	if n := m.windowCount(); n != 0 {
		t.Fatalf("%d windows kept for unlimited rules", n)
	}
	if d, _ := m.Peek(context.Background(), []Rule{keyRule("never-seen", 1, 0)}, 0); d != nil || m.windowCount() != 0 {
		t.Fatal("Peek must not create windows")
	}
}

func TestMemoryEvictsIdleWindows(t *testing.T) {
	clk := newClock()
	m := NewMemory(clk.Now)
	for i := range 200 {
		mustReserve(t, m, "a", []Rule{keyRule(fmt.Sprint("k", i), 1, 0)}, 0)
	}
	if n := m.windowCount(); n != 200 {
		t.Fatalf("%d windows, want 200", n)
	}
	clk.Set(t0.Add(idleAfter + sweepEvery + time.Second))
	// Touch every shard once so each sweeps.
	for i := range 200 {
		mustReserve(t, m, "b", []Rule{keyRule(fmt.Sprint("other", i), 1, 0)}, 0)
	}
	if n := m.windowCount(); n != 200 {
		t.Fatalf("%d windows after the idle ones were swept, want only the 200 new ones", n)
	}
	// An evicted key starts afresh.
	mustReserve(t, m, "c", []Rule{keyRule("k0", 1, 0)}, 0)
}

func (m *Memory) windowCount() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.windows)
		s.mu.Unlock()
	}
	return n
}

func BenchmarkMemoryReserveSettle(b *testing.B) {
	m := NewMemory(nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			// Many keys, so this measures the limiter rather than one mutex.
			rules := []Rule{{Scope: ScopeKey, ID: fmt.Sprint("k", i%512), RPM: 1 << 40, TPM: 1 << 50}}
			r, _, d, err := m.Reserve(ctx, fmt.Sprint("r", i, "-", &i), rules, 100)
			if err != nil || d != nil {
				b.Fatal(d, err)
			}
			_ = m.Settle(ctx, r, 80)
		}
	})
}

// Rules listed in different orders by concurrent requests must not deadlock,
// and every window must count exactly the requests recorded in it.
func TestMemoryRuleOrderNoDeadlock(t *testing.T) {
	m := NewMemory(newClock().Now)
	a, b, c := keyRule("a", 1<<30, 0), provRule("b", 1<<30, 0), provRule("c", 1<<30, 0)
	sets := [][]Rule{{a, b}, {b, a}, {c, b, a}, {a, c}, {b, c}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 500 {
					rules := sets[(g+i)%len(sets)]
					r, _, d, err := m.Reserve(context.Background(), fmt.Sprint(g, "-", i), rules, 1)
					if err != nil || d != nil {
						t.Error(d, err)
						return
					}
					if i%3 == 0 {
						_ = m.Release(context.Background(), r)
					}
				}
			})
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("deadlock")
	}
	want := map[string]int64{}
	for g := range 8 {
		for i := range 500 {
			if i%3 == 0 {
				continue
			}
			for _, r := range sets[(g+i)%len(sets)] {
				want[r.ID]++
			}
		}
	}
	for _, r := range []Rule{a, b, c} {
		w := m.window(windowKey(r), false, t0.UnixNano())
		if w.count != want[r.ID] || w.sum != want[r.ID] {
			t.Errorf("%s: count %d sum %d, want %d", r.ID, w.count, w.sum, want[r.ID])
		}
	}
}
