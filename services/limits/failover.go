package limits

import (
	"context"
	"errors"
	"time"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/failover"
)

// Failover fronts the shared (Redis) limiter. When the primary fails it
// either limits per process with an in-memory limiter (failOpen: limits stay
// roughly right and traffic flows) or refuses with 503 (limits are never
// overshot). Its state probes a primary that is down and reports each change
// of state once.
type Failover struct {
	state    *failover.State
	primary  Limiter
	local    *Memory
	failOpen bool
}

var _ Limiter = (*Failover)(nil)

// Up reports whether the primary is in use.
func (f *Failover) Up() bool { return f.state.Up() }

// FailoverLimiter is the name the design notes use for Failover.
type FailoverLimiter = Failover

// NewFailover wraps primary. local may be nil (a new Memory is made); onState
// and clock may be nil.
func NewFailover(primary Limiter, local *Memory, failOpen bool, onState func(up bool, err error), clock func() time.Time) *Failover {
	if local == nil {
		local = NewMemory(clock)
	}
	return &Failover{state: failover.New(isOutage, onState, clock), primary: primary, local: local, failOpen: failOpen}
}

// isOutage tells a store failure from an answer: a duplicate id is an answer.
func isOutage(err error) bool { return !errors.Is(err, ErrDuplicate) }

func unavailable(err error) error {
	return apierr.Unavailable("Rate limiting is temporarily unavailable.", nil).WithCause(err)
}

// Reserve implements Limiter.
func (f *Failover) Reserve(ctx context.Context, id string, rules []Rule, tokens int64) (Reservation, []Status, *Denial, error) {
	var perr error
	if f.state.UseStore() {
		r, st, d, err := f.primary.Reserve(ctx, id, rules, tokens)
		if !f.state.Observe(err) {
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
	if f.state.UseStore() {
		d, err := f.primary.Peek(ctx, rules, tokens)
		if !f.state.Observe(err) {
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
	f.state.Observe(err)
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
	f.state.Observe(err)
	return err
}
