package limits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock shared by a test and its limiters.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// factory builds a limiter for one subtest; every call in a subtest shares
// the same backing state (same Redis prefix), so a factory can be called
// twice to get two instances of one deployment.
type factory func(t *testing.T, clock func() time.Time) Limiter

func keyRule(id string, rpm, tpm int64) Rule {
	return Rule{Scope: ScopeKey, ID: id, RPM: rpm, TPM: tpm}
}
func provRule(id string, rpm, tpm int64) Rule {
	return Rule{Scope: ScopeProvider, ID: id, RPM: rpm, TPM: tpm}
}

// runSuite is the behaviour every backend must show.
func runSuite(t *testing.T, newLimiter factory) {
	ctx := context.Background()

	t.Run("exact RPM under concurrency", func(t *testing.T) {
		l := newLimiter(t, newClock().Now)
		got := concurrentReserve(t, []Limiter{l}, 50, []Rule{keyRule("k", 10, 0)}, 1)
		if got != 10 {
			t.Fatalf("%d of 50 admitted, want exactly 10", got)
		}
	})

	t.Run("exact TPM under concurrency", func(t *testing.T) {
		for _, tc := range []struct{ limit, size int64 }{{1000, 30}, {1000, 100}, {500, 7}} {
			t.Run(fmt.Sprintf("%d/%d", tc.limit, tc.size), func(t *testing.T) {
				l := newLimiter(t, newClock().Now)
				n := int(tc.limit/tc.size) + 40
				got := concurrentReserve(t, []Limiter{l}, n, []Rule{keyRule("k", 0, tc.limit)}, tc.size)
				if want := int(tc.limit / tc.size); got != want {
					t.Fatalf("%d admitted, want exactly %d", got, want)
				}
			})
		}
	})

	t.Run("sliding window frees exactly the oldest", func(t *testing.T) {
		clk := newClock()
		l := newLimiter(t, clk.Now)
		rules := []Rule{keyRule("k", 60, 0)}
		for i := range 60 {
			clk.Set(t0.Add(time.Duration(i) * time.Second))
			mustReserve(t, l, fmt.Sprint("r", i), rules, 0)
		}
		clk.Set(t0.Add(59500 * time.Millisecond))
		d := mustDeny(t, l, "late", rules, 0)
		if !d.ResetAt.Equal(t0.Add(60*time.Second)) || d.RetryAfter != 500*time.Millisecond {
			t.Fatalf("reset %v retry %v, want t0+60s and 500ms", d.ResetAt, d.RetryAfter)
		}
		clk.Set(t0.Add(60 * time.Second)) // the entry of t=0 leaves
		mustReserve(t, l, "r60", rules, 0)
		d = mustDeny(t, l, "r60b", rules, 0)
		if !d.ResetAt.Equal(t0.Add(61 * time.Second)) {
			t.Fatalf("reset %v, want t0+61s (the entry of t=1)", d.ResetAt)
		}
		clk.Set(t0.Add(61 * time.Second))
		mustReserve(t, l, "r61", rules, 0)
		mustDeny(t, l, "r61b", rules, 0)
	})

	t.Run("settle corrects down and up, once", func(t *testing.T) {
		l := newLimiter(t, newClock().Now)
		rules := []Rule{keyRule("k", 0, 100)}
		a := mustReserve(t, l, "a", rules, 50)
		if err := l.Settle(ctx, a, 20); err != nil {
			t.Fatal(err)
		}
		if err := l.Settle(ctx, a, 90); err != nil { // no-op
			t.Fatal(err)
		}
		b := mustReserve(t, l, "b", rules, 80) // 20 + 80 = 100
		mustDeny(t, l, "c", rules, 1)
		if err := l.Settle(ctx, b, 10); err != nil { // 30 used
			t.Fatal(err)
		}
		d := mustReserve(t, l, "d", rules, 70)
		if err := l.Settle(ctx, d, 75); err != nil { // up: 105 > 100
			t.Fatal(err)
		}
		if den := mustDeny(t, l, "e", rules, 0); den.LimitType != LimitTPM {
			t.Fatalf("limit type %q", den.LimitType)
		}
		if den, err := l.Peek(ctx, rules, 0); err != nil || den == nil {
			t.Fatalf("peek after overshoot: %v %v", den, err)
		}
	})

	t.Run("release frees and is idempotent", func(t *testing.T) {
		l := newLimiter(t, newClock().Now)
		rules := []Rule{keyRule("k", 2, 100)}
		a := mustReserve(t, l, "a", rules, 60)
		mustReserve(t, l, "b", rules, 40)
		mustDeny(t, l, "c", rules, 0)
		for range 2 {
			if err := l.Release(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		mustReserve(t, l, "c", rules, 60)
		mustDeny(t, l, "d", rules, 0)               // b and c remain: the second Release freed nothing more
		if err := l.Settle(ctx, a, 1); err != nil { // settle after release: no-op
			t.Fatal(err)
		}
	})

	t.Run("peek does not record", func(t *testing.T) {
		l := newLimiter(t, newClock().Now)
		rules := []Rule{keyRule("k", 1, 10)}
		for range 5 {
			if d, err := l.Peek(ctx, rules, 10); err != nil || d != nil {
				t.Fatalf("peek: %v %v", d, err)
			}
		}
		if d, _ := l.Peek(ctx, rules, 11); d == nil || d.LimitType != LimitTPM {
			t.Fatalf("peek of an oversized request: %+v", d)
		}
		mustReserve(t, l, "a", rules, 5)
		d, err := l.Peek(ctx, rules, 0)
		if err != nil || d == nil || d.LimitType != LimitRPM {
			t.Fatalf("peek at the limit: %+v %v", d, err)
		}
	})

	t.Run("several rules all or nothing", func(t *testing.T) {
		l := newLimiter(t, newClock().Now)
		key := keyRule("k", 5, 0)
		prov := provRule("p", 1, 0)
		_, st := mustReserveStatus(t, l, "a", []Rule{key, prov}, 0)
		if st[0].Limit != 5 || st[0].Remaining != 4 || st[1].Remaining != 0 {
			t.Fatalf("statuses %+v", st)
		}
		_, st, d, err := l.Reserve(ctx, "b", []Rule{key, prov}, 0)
		if err != nil || d == nil || d.Rule.Scope != ScopeProvider || d.Rule.ID != "p" {
			t.Fatalf("want provider denial, got %+v %v", d, err)
		}
		if len(st) != 2 || st[0].Remaining != 4 {
			t.Fatalf("denied statuses %+v: the key must show nothing recorded", st)
		}
		for i := range 4 { // the key still has exactly 4 left
			mustReserve(t, l, fmt.Sprint("k", i), []Rule{key}, 0)
		}
		mustDeny(t, l, "k4", []Rule{key}, 0)
	})

	t.Run("denial fields", func(t *testing.T) {
		clk := newClock()
		l := newLimiter(t, clk.Now)
		rpm := []Rule{keyRule("rpm", 2, 0)}
		mustReserve(t, l, "a", rpm, 0)
		clk.Set(t0.Add(10 * time.Second))
		mustReserve(t, l, "b", rpm, 0)
		clk.Set(t0.Add(20 * time.Second))
		d := mustDeny(t, l, "c", rpm, 0)
		want := Denial{Rule: rpm[0], LimitType: LimitRPM, Limit: 2, Remaining: 0,
			ResetAt: t0.Add(60 * time.Second), RetryAfter: 40 * time.Second}
		if !denialEqual(*d, want) || d.RetryAfterSeconds() != 40 {
			t.Fatalf("got %+v\nwant %+v", *d, want)
		}

		clk.Set(t0)
		tpm := []Rule{provRule("tpm", 0, 100)}
		mustReserve(t, l, "x", tpm, 60)
		clk.Set(t0.Add(5 * time.Second))
		mustReserve(t, l, "y", tpm, 30)
		clk.Set(t0.Add(10 * time.Second))
		for _, tc := range []struct {
			tokens int64
			reset  time.Time
		}{
			{50, t0.Add(60 * time.Second)},  // x leaving frees enough
			{80, t0.Add(65 * time.Second)},  // x and y must leave
			{200, t0.Add(70 * time.Second)}, // never fits: a full window from now
		} {
			d := mustDeny(t, l, "z", tpm, tc.tokens)
			want := Denial{Rule: tpm[0], LimitType: LimitTPM, Limit: 100, ResetAt: tc.reset, RetryAfter: tc.reset.Sub(clk.Now())}
			if !denialEqual(*d, want) {
				t.Errorf("%d tokens: got %+v\nwant %+v", tc.tokens, *d, want)
			}
		}
	})

	t.Run("status for headers", func(t *testing.T) {
		clk := newClock()
		l := newLimiter(t, clk.Now)
		rules := []Rule{keyRule("k", 3, 0), provRule("p", 0, 1000)}
		r, st := mustReserveStatus(t, l, "a", rules, 10)
		if len(st) != 2 || st[0] != (Status{Limit: 3, Remaining: 2, ResetAt: st[0].ResetAt}) || !st[0].ResetAt.Equal(t0.Add(Window)) {
			t.Fatalf("statuses %+v", st)
		}
		if st[1].Limit != 0 {
			t.Errorf("a TPM-only rule has no RPM status: %+v", st[1])
		}
		if r.ID != "a" || r.Tokens != 10 || !r.At.Equal(t0) || len(r.Rules) != 2 {
			t.Errorf("reservation %+v", r)
		}
	})

	t.Run("duplicate id refused", func(t *testing.T) {
		l := newLimiter(t, newClock().Now)
		rules := []Rule{keyRule("k", 10, 0)}
		mustReserve(t, l, "a", rules, 0)
		if _, _, _, err := l.Reserve(ctx, "a", rules, 0); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("err %v, want ErrDuplicate", err)
		}
	})

	t.Run("unlimited rules always pass", func(t *testing.T) {
		l := newLimiter(t, newClock().Now)
		for i := range 100 {
			mustReserve(t, l, fmt.Sprint(i), []Rule{keyRule("free", 0, 0)}, 1e9)
		}
	})
}

func denialEqual(a, b Denial) bool {
	return a.Rule == b.Rule && a.LimitType == b.LimitType && a.Limit == b.Limit &&
		a.Remaining == b.Remaining && a.ResetAt.Equal(b.ResetAt) && a.RetryAfter == b.RetryAfter
}

// concurrentReserve fires n Reserve calls at once, spread over limiters, and
// returns how many were admitted.
func concurrentReserve(t *testing.T, ls []Limiter, n int, rules []Rule, tokens int64) int {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, _, d, err := ls[i%len(ls)].Reserve(context.Background(), fmt.Sprint("req-", i), rules, tokens)
			if err != nil {
				t.Error(err)
				return
			}
			if d == nil {
				ok.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	return int(ok.Load())
}

func mustReserve(t *testing.T, l Limiter, id string, rules []Rule, tokens int64) Reservation {
	t.Helper()
	r, _ := mustReserveStatus(t, l, id, rules, tokens)
	return r
}

func mustReserveStatus(t *testing.T, l Limiter, id string, rules []Rule, tokens int64) (Reservation, []Status) {
	t.Helper()
	r, st, d, err := l.Reserve(context.Background(), id, rules, tokens)
	if err != nil || d != nil {
		t.Fatalf("reserve %s: denial %+v err %v", id, d, err)
	}
	return r, st
}

func mustDeny(t *testing.T, l Limiter, id string, rules []Rule, tokens int64) *Denial {
	t.Helper()
	r, _, d, err := l.Reserve(context.Background(), id, rules, tokens)
	if err != nil || d == nil {
		t.Fatalf("reserve %s: want a denial, got reservation %+v err %v", id, r, err)
	}
	if d.Remaining != 0 {
		t.Errorf("denial remaining %d", d.Remaining)
	}
	return d
}
