package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/services/apierr"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// t0 is a Wednesday noon, so a 10-minute step stays in the same day and week.
var t0 = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func newClock() *fakeClock { return &fakeClock{now: t0} }
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// loader is a SpendLoader over a fixed table, counting its calls.
type loader struct {
	mu    sync.Mutex
	spend map[string]float64 // kind/id → spend since any time
	since map[string]time.Time
	calls atomic.Int64
	err   error
}

func newLoader() *loader { return &loader{spend: map[string]float64{}, since: map[string]time.Time{}} }

func (l *loader) load(_ context.Context, kind, id string, since time.Time) (float64, error) {
	l.calls.Add(1)
	time.Sleep(time.Millisecond) // a real query: lets concurrent first uses overlap
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	l.since[kind+"/"+id] = since
	return l.spend[kind+"/"+id], nil
}

type factory func(t *testing.T, load SpendLoader, clock func() time.Time) Tracker

func keyScope(id string, limit float64, p Period) Scope {
	return Scope{Kind: KindKey, ID: id, Limit: limit, Period: p}
}

func runSuite(t *testing.T, newTracker factory) {
	ctx := context.Background()

	t.Run("exact concurrent reservation", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			scopes []Scope
			n      int
			want   int
		}{
			{"key $1 by $0.1", []Scope{keyScope("k", 1, Daily)}, 30, 10},
			{"project tighter than key", []Scope{keyScope("k", 1, Daily), {Kind: KindProject, ID: "p", Limit: 0.5, Period: Monthly}}, 30, 5},
			{"unlimited", []Scope{keyScope("k", 0, Daily)}, 30, 30},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tr := newTracker(t, newLoader().load, newClock().Now)
				if got := concurrentReserve(t, []Tracker{tr}, tc.n, tc.scopes, 0.1); got != tc.want {
					t.Fatalf("%d admitted, want exactly %d", got, tc.want)
				}
			})
		}
	})

	t.Run("settle replaces the reservation exactly once", func(t *testing.T) {
		tr := newTracker(t, newLoader().load, newClock().Now)
		s := []Scope{keyScope("k", 1, Daily)}
		mustReserve(t, tr, "r1", s, 0.5)
		mustSettle(t, tr, "r1", 0.2)
		mustSettle(t, tr, "r1", 0.9) // no-op
		mustSettle(t, tr, "unknown", 5)
		wantSpend(t, tr, "k", Daily, 0.2)
		mustReserve(t, tr, "r2", s, 0.8) // 0.2 + 0.8 = 1: allowed
		mustRefuse(t, tr, "r3", s, 0.01)
		mustSettle(t, tr, "r2", 0.8)
		wantSpend(t, tr, "k", Daily, 1.0)
		mustRefuse(t, tr, "r4", s, 0) // spend reached the limit
	})

	t.Run("settle may exceed the estimate", func(t *testing.T) {
		tr := newTracker(t, newLoader().load, newClock().Now)
		s := []Scope{keyScope("k", 1, Daily)}
		mustReserve(t, tr, "r1", s, 0.1)
		mustSettle(t, tr, "r1", 1.3)
		wantSpend(t, tr, "k", Daily, 1.3)
		e := mustRefuse(t, tr, "r2", s, 0)
		if e.Details["current_spend"] != 1.3 {
			t.Fatalf("current_spend %v", e.Details["current_spend"])
		}
	})

	t.Run("duplicate request id", func(t *testing.T) {
		tr := newTracker(t, newLoader().load, newClock().Now)
		s := []Scope{keyScope("k", 1, Daily)}
		mustReserve(t, tr, "r1", s, 0.1)
		if err := tr.Reserve(ctx, "r1", s, 0.1); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("err %v, want ErrDuplicate", err)
		}
	})

	t.Run("period roll-over resets spend", func(t *testing.T) {
		clk := newClock()
		tr := newTracker(t, newLoader().load, clk.Now)
		s := []Scope{keyScope("k", 1, Daily)}
		clk.Set(time.Date(2026, 3, 4, 23, 59, 0, 0, time.UTC))
		mustReserve(t, tr, "a", s, 0.9)
		mustSettle(t, tr, "a", 0.9)
		mustRefuse(t, tr, "b", s, 0.2)
		mustReserve(t, tr, "c", s, 0.1) // held across midnight
		clk.Set(time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC))
		wantSpend(t, tr, "k", Daily, 0)
		mustReserve(t, tr, "d", s, 0.9) // the old day's hold does not count today
		mustSettle(t, tr, "c", 0.05)    // goes to the current day
		wantSpend(t, tr, "k", Daily, 0.05)
	})

	t.Run("reconciliation from the usage table", func(t *testing.T) {
		ld := newLoader()
		ld.spend["key/k"] = 0.7
		ld.spend["project/p"] = 3
		tr := newTracker(t, ld.load, newClock().Now)
		s := []Scope{keyScope("k", 1, Weekly), {Kind: KindProject, ID: "p", Limit: 0, Period: Total}}
		got := concurrentReserve(t, []Tracker{tr}, 20, s, 0.1)
		if got != 3 {
			t.Fatalf("%d admitted after loading 0.7, want 3", got)
		}
		if n := ld.calls.Load(); n != 2 {
			t.Fatalf("loader called %d times, want once per counter (2)", n)
		}
		if since := ld.since["key/k"]; !since.Equal(PeriodStart(Weekly, t0)) {
			t.Errorf("loaded since %v, want the week's start", since)
		}
		if since := ld.since["project/p"]; !since.IsZero() {
			t.Errorf("total loaded since %v, want the zero time", since)
		}
		wantSpend(t, tr, "k", Weekly, 0.7)
		wantSpend(t, tr, "never-used", Total, 0)
		if sp, err := tr.Spend(ctx, KindProject, "p", Total); err != nil || sp != 3 {
			t.Fatalf("project spend %v %v, want 3 (tracked without a limit)", sp, err)
		}
	})

	t.Run("loader failure", func(t *testing.T) {
		ld := newLoader()
		ld.err = errors.New("db down")
		tr := newTracker(t, ld.load, newClock().Now)
		err := tr.Reserve(ctx, "r", []Scope{keyScope("k", 1, Daily)}, 0.1)
		var le *LoadError
		if !errors.As(err, &le) {
			t.Fatalf("err %v, want *LoadError", err)
		}
		ld.mu.Lock()
		ld.err = nil
		ld.mu.Unlock()
		mustReserve(t, tr, "r", []Scope{keyScope("k", 1, Daily)}, 0.1)
	})

	t.Run("402 details", func(t *testing.T) {
		clk := newClock()
		tr := newTracker(t, newLoader().load, clk.Now)
		for _, tc := range []struct {
			scope  Scope
			resets any
		}{
			{keyScope("d", 0.5, Daily), "2026-03-05T00:00:00Z"},
			{keyScope("w", 0.5, Weekly), "2026-03-09T00:00:00Z"},
			{Scope{Kind: KindProject, ID: "m", Limit: 0.5, Period: Monthly}, "2026-04-01T00:00:00Z"},
			{Scope{Kind: KindProject, ID: "t", Limit: 0.5, Period: Total}, nil},
		} {
			s := []Scope{tc.scope}
			mustReserve(t, tr, "a"+tc.scope.ID, s, 0.3)
			mustSettle(t, tr, "a"+tc.scope.ID, 0.25)
			e := mustRefuse(t, tr, "b"+tc.scope.ID, s, 0.3)
			want := map[string]any{"scope": tc.scope.Kind, "budget_limit": 0.5, "current_spend": 0.25, "period_resets_at": tc.resets}
			if fmt.Sprint(e.Details) != fmt.Sprint(want) {
				t.Errorf("%s: details %v, want %v", tc.scope.Period, e.Details, want)
			}
		}
	})

	t.Run("unsettled reservations expire", func(t *testing.T) {
		clk := newClock()
		tr := newTracker(t, newLoader().load, clk.Now)
		s := []Scope{keyScope("k", 1, Daily)}
		mustReserve(t, tr, "crashed", s, 0.9)
		mustRefuse(t, tr, "b", s, 0.2)
		clk.Set(t0.Add(DefaultReservationTTL + time.Second))
		mustReserve(t, tr, "c", s, 0.2)
		mustSettle(t, tr, "crashed", 0.3) // a late settle still charges
		wantSpend(t, tr, "k", Daily, 0.3)
	})
}

var reqSeq atomic.Int64 // request ids unique across calls sharing a store

func concurrentReserve(t *testing.T, ts []Tracker, n int, scopes []Scope, estimate float64) int {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			err := ts[i%len(ts)].Reserve(context.Background(), fmt.Sprint("req-", reqSeq.Add(1)), scopes, estimate)
			var ae *apierr.Error
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &ae) && ae.Status == http.StatusPaymentRequired:
			default:
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	return int(ok.Load())
}

func mustReserve(t *testing.T, tr Tracker, id string, s []Scope, est float64) {
	t.Helper()
	if err := tr.Reserve(context.Background(), id, s, est); err != nil {
		t.Fatalf("reserve %s: %v", id, err)
	}
}

func mustRefuse(t *testing.T, tr Tracker, id string, s []Scope, est float64) *apierr.Error {
	t.Helper()
	err := tr.Reserve(context.Background(), id, s, est)
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusPaymentRequired || ae.Type != apierr.TypeBudgetExceeded {
		t.Fatalf("reserve %s: %v, want 402 budget_exceeded_error", id, err)
	}
	return ae
}

func mustSettle(t *testing.T, tr Tracker, id string, actual float64) {
	t.Helper()
	if err := tr.Settle(context.Background(), id, actual); err != nil {
		t.Fatalf("settle %s: %v", id, err)
	}
}

func wantSpend(t *testing.T, tr Tracker, id string, p Period, want float64) {
	t.Helper()
	got, err := tr.Spend(context.Background(), KindKey, id, p)
	if err != nil || math.Abs(got-want) > 1e-9 {
		t.Fatalf("spend of %s: %v %v, want %v", id, got, err, want)
	}
}
