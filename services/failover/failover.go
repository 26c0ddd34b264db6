// Package failover tracks whether a shared store (Redis) is usable, for the
// rate limiter and the budget tracker, which both fall back to process-local
// state (or refuse) while it is not. It only keeps the state; what to do in
// each state is the caller's.
package failover

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ProbeEvery is how often a store that is down is tried again.
const ProbeEvery = time.Second

// State is up or down. While down, one call per ProbeEvery goes to the
// store as a probe; its first success switches back. onState is called once
// per change, so an outage is logged once, not once per request.
type State struct {
	isOutage func(error) bool
	onState  func(up bool, err error)
	clock    func() time.Time

	mu        sync.Mutex
	down      bool
	lastProbe time.Time
}

// New starts up. isOutage tells a store failure from an answer (a denial,
// a duplicate id); onState and clock may be nil.
func New(isOutage func(error) bool, onState func(up bool, err error), clock func() time.Time) *State {
	if clock == nil {
		clock = time.Now
	}
	if onState == nil {
		onState = func(bool, error) {}
	}
	return &State{isOutage: isOutage, onState: onState, clock: clock}
}

// Up reports whether the store is in use.
func (s *State) Up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.down
}

// UseStore says whether this call goes to the store: always while it is
// up, and as the one probe per ProbeEvery while it is down.
func (s *State) UseStore() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		return true
	}
	if now := s.clock(); now.Sub(s.lastProbe) >= ProbeEvery {
		s.lastProbe = now
		return true
	}
	return false
}

// Observe records the store's answer to a call; it reports whether err is
// an outage (the caller then falls back).
func (s *State) Observe(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller gave up: no news about the store
	}
	outage := err != nil && s.isOutage(err)
	s.mu.Lock()
	changed := s.down != outage
	s.down = outage
	if outage && changed {
		s.lastProbe = s.clock()
	}
	s.mu.Unlock()
	if changed {
		s.onState(!outage, err)
	}
	return outage
}
