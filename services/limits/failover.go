package limits

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/llmgw/gateway/services/apierr"
)

// probeEvery is how often a down primary is tried again.
const probeEvery = time.Second

// Failover fronts the shared (Redis) limiter. When the primary fails it
// either limits per process with an in-memory limiter (failOpen: limits stay
// roughly right and traffic flows) or refuses with 503 (limits are never
// overshot). While the primary is down, one call per second probes it; the
// first success switches back. onState is called once per change of state,
// so a Redis outage is logged once, not once per request.
type Failover struct {
	primary  Limiter
	local    *Memory
	failOpen bool
	onState  func(up bool, err error)
	clock    func() time.Time

	mu        sync.Mutex
	down      bool
	lastProbe time.Time
}

var _ Limiter = (*Failover)(nil)

// FailoverLimiter is the name the design notes use for Failover.
type FailoverLimiter = Failover

// NewFailover wraps primary. local may be nil (a new Memory is made); onState
// and clock may be nil.
func NewFailover(primary Limiter, local *Memory, failOpen bool, onState func(up bool, err error), clock func() time.Time) *Failover {
	if clock == nil {
		clock = time.Now
	}
	if local == nil {
		local = NewMemory(clock)
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

// usePrimary says whether this call goes to the primary: always while it is
// up, and as the one probe per second while it is down.
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
		return false // the caller gave up: no news about the store // the primary answered; the caller's problem
	}
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

// isOutage tells a store failure from an answer: a duplicate id is an answer
// and a caller's cancelled context says nothing about the store.
func isOutage(err error) bool {
	return err != nil && !errors.Is(err, ErrDuplicate) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func unavailable(err error) error {
	return apierr.Unavailable("Rate limiting is temporarily unavailable.", nil).WithCause(err)
}

// Reserve implements Limiter.
func (f *Failover) Reserve(ctx context.Context, id string, rules []Rule, tokens int64) (Reservation, []Status, *Denial, error) {
	var perr error
	if f.usePrimary() {
		r, st, d, err := f.primary.Reserve(ctx, id, rules, tokens)
		if !f.observe(err) {
			return r, st, d, err
		}
		perr = err
	}
	if !f.failOpen {
		return Reservation{}, nil, nil, unavailable(perr)
	}
	r, st, d, err := f.local.Reserve(ctx, id, rules, tokens)
	r.local = true
	return r, st, d, err
}

// Peek implements Limiter.
func (f *Failover) Peek(ctx context.Context, rules []Rule, tokens int64) (*Denial, error) {
	var perr error
	if f.usePrimary() {
		d, err := f.primary.Peek(ctx, rules, tokens)
		if !f.observe(err) {
			return d, err
		}
		perr = err
	}
	if !f.failOpen {
		return nil, unavailable(perr)
	}
	return f.local.Peek(ctx, rules, tokens)
}

// Settle implements Limiter. A reservation held by a primary that is down is
// left alone: it expires with its window.
func (f *Failover) Settle(ctx context.Context, r Reservation, actualTokens int64) error {
	if r.local {
		return f.local.Settle(ctx, r, actualTokens)
	}
	if !f.Up() {
		return nil
	}
	err := f.primary.Settle(ctx, r, actualTokens)
	f.observe(err)
	return err
}

// Release implements Limiter; see Settle.
func (f *Failover) Release(ctx context.Context, r Reservation) error {
	if r.local {
		return f.local.Release(ctx, r)
	}
	if !f.Up() {
		return nil
	}
	err := f.primary.Release(ctx, r)
	f.observe(err)
	return err
}
