package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/llmgw/gateway/services/apierr"
)

// probeEvery is how often a down primary is tried again.
const probeEvery = time.Second

// Failover fronts the shared (Redis) tracker. When the primary fails it
// either tracks budgets per process with a MemoryTracker (failOpen) or
// refuses with 503. While the primary is down, one call per second probes it;
// the first success switches back. onState is called once per change of
// state.
type Failover struct {
	primary  Tracker
	local    *MemoryTracker
	failOpen bool
	onState  func(up bool, err error)
	clock    func() time.Time

	mu        sync.Mutex
	down      bool
	lastProbe time.Time
}

var _ Tracker = (*Failover)(nil)

// NewFailover wraps primary. local should share the primary's SpendLoader so
// the fallback starts from the usage table; nil makes one without a loader.
// onState and clock may be nil.
func NewFailover(primary Tracker, local *MemoryTracker, failOpen bool, onState func(up bool, err error), clock func() time.Time) *Failover {
	if clock == nil {
		clock = time.Now
	}
	if local == nil {
		local = NewMemory(nil, clock)
	}
	if onState == nil {
		onState = func(bool, error) {}
	}
	return &Failover{primary: primary, local: local, failOpen: failOpen, onState: onState, clock: clock}
}

// Up reports whether the primary is in use.
func (f *Failover) Up() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.down
}

func (f *Failover) usePrimary() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.down {
		return true
	}
	if now := f.clock(); now.Sub(f.lastProbe) >= probeEvery {
		f.lastProbe = now
		return true
	}
	return false
}

// observe records the primary's answer; it reports whether err is an outage.
func (f *Failover) observe(err error) bool {
	outage := isOutage(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller gave up: no news about the store
	}
	// Any other answer (a 402, a denial, a duplicate id) shows the store is up.
	f.mu.Lock()
	changed := f.down != outage
	f.down = outage
	if outage && changed {
		f.lastProbe = f.clock()
	}
	f.mu.Unlock()
	if changed {
		f.onState(!outage, err)
	}
	return outage
}

// isOutage tells a store failure from an answer: a 402, a duplicate id, a
// failing usage table or the caller's own context say nothing about Redis.
func isOutage(err error) bool {
	if err == nil {
		return false
	}
	var ae *apierr.Error
	var le *LoadError
	return !errors.As(err, &ae) && !errors.As(err, &le) && !errors.Is(err, ErrDuplicate) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func unavailable(err error) error {
	return apierr.Unavailable("Budget tracking is temporarily unavailable.", nil).WithCause(err)
}

// Reserve implements Tracker.
func (f *Failover) Reserve(ctx context.Context, requestID string, scopes []Scope, estimate float64) error {
	var perr error
	if f.usePrimary() {
		err := f.primary.Reserve(ctx, requestID, scopes, estimate)
		if !f.observe(err) {
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
	f.observe(err)
	return err
}

// Spend implements Tracker.
func (f *Failover) Spend(ctx context.Context, kind, id string, p Period) (float64, error) {
	var perr error
	if f.usePrimary() {
		v, err := f.primary.Spend(ctx, kind, id, p)
		if !f.observe(err) {
			return v, err
		}
		perr = err
	}
	if !f.failOpen {
		return 0, unavailable(perr)
	}
	return f.local.Spend(ctx, kind, id, p)
}
