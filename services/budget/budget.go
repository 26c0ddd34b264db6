// Package budget enforces spend budgets of API keys and projects per UTC
// period, reserve-then-settle.
//
// Before a call the request reserves its estimated cost in every scope it
// belongs to (its key and its project), atomically and all or nothing; it is
// refused with 402 when settled spend + open reservations + the estimate would
// pass a limit. After the call Settle replaces the reservation by the real
// cost, exactly once per request id. Concurrent requests can therefore
// overshoot a budget by at most the difference between real and estimated
// cost, on one instance (MemoryTracker) or many sharing Redis (RedisTracker).
//
// Spend counters are keyed by (kind, id, period start) and initialised from
// the usage table the first time they are touched, so a restart forgets
// nothing. Money is counted internally in integer nano-dollars so that sums of
// many small costs are exact and comparable with the limit.
package budget

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/llmgw/gateway/services/apierr"
)

// Period is a budget period; every period is in UTC.
type Period string

const (
	Daily   Period = "daily"
	Weekly  Period = "weekly" // ISO week, from Monday 00:00 UTC
	Monthly Period = "monthly"
	Total   Period = "total" // never resets
)

// Scope kinds.
const (
	KindKey     = "key"
	KindProject = "project"
)

// DefaultReservationTTL is how long an unsettled reservation holds budget. A
// request that crashed never settles; after this its hold is dropped. (A late
// Settle still records the real cost.)
const DefaultReservationTTL = 10 * time.Minute

// requestTTL is how long a request's reservation record is kept for Settle:
// far longer than any request, so a slow stream settles normally.
const requestTTL = 24 * time.Hour

// PeriodStart returns the start of the period containing now: the UTC
// calendar day, the ISO week (Monday 00:00 UTC), the month; the zero time for
// Total (and an unknown period).
func PeriodStart(p Period, now time.Time) time.Time {
	now = now.UTC()
	y, m, d := now.Date()
	switch p {
	case Daily:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case Weekly:
		back := (int(now.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
	case Monthly:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// PeriodEnd returns when the period containing now resets (the next start);
// the zero time for Total.
func PeriodEnd(p Period, now time.Time) time.Time {
	s := PeriodStart(p, now)
	switch p {
	case Daily:
		return s.AddDate(0, 0, 1)
	case Weekly:
		return s.AddDate(0, 0, 7)
	case Monthly:
		return s.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// Scope is one budget a request counts against.
type Scope struct {
	Kind   string  // KindKey or KindProject
	ID     string  //
	Limit  float64 // USD; <= 0 means no budget, but spend is still tracked
	Period Period
}

// SpendLoader sums the cost in the usage table of one scope since a time
// (the zero time: everything). It initialises a counter on first use.
type SpendLoader func(ctx context.Context, kind, id string, since time.Time) (float64, error)

// Tracker is a budget tracker; every method is safe for concurrent use.
type Tracker interface {
	// Reserve atomically checks every scope and, only if all pass, records a
	// reservation of estimate USD under requestID in each. A refusal is an
	// *apierr.Error 402 budget_exceeded_error.
	Reserve(ctx context.Context, requestID string, scopes []Scope, estimate float64) error
	// Settle replaces the reservation by the real cost, exactly once per
	// requestID (a second call, or one for an unknown id, is a no-op). If the
	// period rolled over since Reserve, the cost goes to the current period.
	Settle(ctx context.Context, requestID string, actual float64) error
	// Spend returns the settled spend of a scope in its current period.
	Spend(ctx context.Context, kind, id string, p Period) (float64, error)
}

// Cost is the price of a call: tokens/1000 × price per 1K, input and output.
func Cost(inputTokens, outputTokens int, inPer1K, outPer1K float64) float64 {
	return float64(inputTokens)/1000*inPer1K + float64(outputTokens)/1000*outPer1K
}

// nano converts USD to integer nano-dollars.
func nano(usd float64) int64 {
	if usd <= 0 || math.IsNaN(usd) {
		return 0
	}
	return int64(math.Round(usd * 1e9))
}

func usd(n int64) float64 { return float64(n) / 1e9 }

// LoadError wraps a SpendLoader failure, so callers (and Failover) can tell a
// database problem from a budget store problem.
type LoadError struct{ Err error }

func (e *LoadError) Error() string { return "budget: loading spend: " + e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

func loadSpend(ctx context.Context, load SpendLoader, kind, id string, start time.Time) (int64, error) {
	if load == nil {
		return 0, nil
	}
	v, err := load(ctx, kind, id, start)
	if err != nil {
		return 0, &LoadError{Err: err}
	}
	return nano(v), nil
}

// exceeded is the 402 of a scope whose budget is spent or would be passed.
func exceeded(s Scope, spend int64, now time.Time) *apierr.Error {
	var resets any // JSON null for a total budget
	if end := PeriodEnd(s.Period, now); !end.IsZero() {
		resets = end.Format(time.RFC3339)
	}
	return apierr.BudgetExceeded(
		fmt.Sprintf("The %s's %s budget of $%.2f is exhausted.", s.Kind, periodName(s.Period), s.Limit),
		map[string]any{
			"scope":            s.Kind,
			"budget_limit":     s.Limit,
			"current_spend":    usd(spend),
			"period_resets_at": resets,
		})
}

func periodName(p Period) string {
	if p == "" {
		return string(Total)
	}
	return string(p)
}

// refuses reports whether a scope with the given state must refuse amount.
func refuses(limit, spend, reserved, amount int64) bool {
	return limit > 0 && (spend >= limit || spend+reserved+amount > limit)
}
