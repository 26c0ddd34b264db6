package budget

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/failover"
)

// Failover fronts the shared (Redis) tracker. When the primary fails it
// either tracks budgets per process with a MemoryTracker (failOpen) or
// refuses with 503. Its state probes a primary that is down and reports each
// change of state once.
type Failover struct {
	state    *failover.State
	primary  Tracker
	local    *MemoryTracker
	failOpen bool
}

var _ Tracker = (*Failover)(nil)

// Up reports whether the primary is in use.
func (f *Failover) Up() bool { return f.state.Up() }

// NewFailover wraps primary. local should share the primary's SpendLoader so
// the fallback starts from the usage table; nil makes one without a loader.
// onState and clock may be nil.
func NewFailover(primary Tracker, local *MemoryTracker, failOpen bool, onState func(up bool, err error), clock func() time.Time) *Failover {
	if local == nil {
		local = NewMemory(nil, clock)
	}
	return &Failover{state: failover.New(isOutage, onState, clock), primary: primary, local: local, failOpen: failOpen}
}

// isOutage tells a store failure from an answer: a 402, a duplicate id or a
// failing usage table say nothing about Redis.
func isOutage(err error) bool {
	var ae *apierr.Error
	var le *LoadError
	return !errors.As(err, &ae) && !errors.As(err, &le) && !errors.Is(err, ErrDuplicate)
}

func unavailable(err error) error {
	return apierr.Unavailable("Budget tracking is temporarily unavailable.", nil).WithCause(err)
}

// Reserve implements Tracker.
func (f *Failover) Reserve(ctx context.Context, requestID string, scopes []Scope, estimate float64) error {
	var perr error
	if f.state.UseStore() {
		err := f.primary.Reserve(ctx, requestID, scopes, estimate)
		if !f.state.Observe(err) {
			return err
		}
		perr = err
	}
	if !f.failOpen {
		return unavailable(perr)
	}
	return f.local.Reserve(ctx, requestID, scopes, estimate)
}

// Settle implements Tracker. A reservation held by a primary that is down
// cannot be charged now; that is reported, not hidden (the usage record
// still carries the cost).
func (f *Failover) Settle(ctx context.Context, requestID string, actual float64) error {
	if f.local.has(requestID) {
		return f.local.Settle(ctx, requestID, actual)
	}
	if !f.Up() {
		return fmt.Errorf("budget: store down, cost of request %s not charged to its budget", requestID)
	}
	err := f.primary.Settle(ctx, requestID, actual)
	f.state.Observe(err)
	return err
}

// Spend implements Tracker.
func (f *Failover) Spend(ctx context.Context, kind, id string, p Period) (float64, error) {
	var perr error
	if f.state.UseStore() {
		v, err := f.primary.Spend(ctx, kind, id, p)
		if !f.state.Observe(err) {
			return v, err
		}
		perr = err
	}
	if !f.failOpen {
		return 0, unavailable(perr)
	}
	return f.local.Spend(ctx, kind, id, p)
}
