// Package health tracks each provider's health from real traffic (passive
// outlier detection, as Envoy does it): a rolling error rate, a count of
// consecutive failures, and a circuit breaker that stops sending requests to a
// provider that keeps failing, probes it after a cool-down, and closes again
// when a probe succeeds.
package health

import (
	"sync"
	"time"
)

// State is what /health reports for a provider.
type State string

const (
	Healthy   State = "healthy"
	Degraded  State = "degraded"
	Unhealthy State = "unhealthy"
	Disabled  State = "disabled"
)

// Options are the breaker thresholds (config `circuit.*`).
type Options struct {
	FailureThreshold   int           // consecutive failures that open the circuit
	ErrorRateThreshold float64       // error rate over Window that opens it...
	MinRequests        int           // ...once at least this many requests were seen
	Window             time.Duration // rolling window of the error rate
	Cooldown           time.Duration // open → half-open
}

type circuit int

const (
	closed circuit = iota
	open
	halfOpen
)

const buckets = 10

type bucket struct {
	start    time.Time
	ok, fail int
}

type entry struct {
	mu          sync.Mutex
	state       circuit
	consecutive int
	openedAt    time.Time
	probeAt     time.Time // when the half-open probe was let through; zero = none
	ring        [buckets]bucket
}

// Tracker holds every provider's circuit. It implements gateway.Health.
type Tracker struct {
	o     Options
	now   func() time.Time
	mu    sync.RWMutex
	byKey map[string]*entry
	// onChange is told about circuit transitions (logging, metrics); may be nil.
	onChange func(provider string, from, to string)
}

// New builds a tracker; now is injectable for tests.
func New(o Options, now func() time.Time, onChange func(provider, from, to string)) *Tracker {
	if o.Window <= 0 {
		o.Window = time.Minute
	}
	if o.Cooldown <= 0 {
		o.Cooldown = 30 * time.Second
	}
	if now == nil {
		now = time.Now
	}
	return &Tracker{o: o, now: now, byKey: map[string]*entry{}, onChange: onChange}
}

func (t *Tracker) get(name string) *entry {
	t.mu.RLock()
	e := t.byKey[name]
	t.mu.RUnlock()
	if e != nil {
		return e
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e = t.byKey[name]; e == nil {
		e = &entry{}
		t.byKey[name] = e
	}
	return e
}

// Allow reports whether a request may go to the provider now. An open circuit
// lets exactly one probe through once the cool-down has passed.
func (t *Tracker) Allow(name string) bool {
	e := t.get(name)
	now := t.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.state {
	case closed:
		return true
	case open:
		if now.Sub(e.openedAt) < t.o.Cooldown {
			return false
		}
		t.transition(name, e, halfOpen)
		e.probeAt = now
		return true
	default: // half-open: one probe at a time; a probe that never reported frees the slot after a cool-down
		if e.probeAt.IsZero() || now.Sub(e.probeAt) >= t.o.Cooldown {
			e.probeAt = now
			return true
		}
		return false
	}
}

// Record reports an attempt's outcome; ok=false only for upstream faults.
func (t *Tracker) Record(name string, ok bool) {
	e := t.get(name)
	now := t.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	b := t.bucketFor(e, now)
	if ok {
		b.ok++
		e.consecutive = 0
		if e.state != closed {
			t.transition(name, e, closed)
			e.ring = [buckets]bucket{} // a recovered provider starts with a clean record
		}
		return
	}
	b.fail++
	e.consecutive++
	switch e.state {
	case halfOpen:
		e.openedAt, e.probeAt = now, time.Time{}
		t.transition(name, e, open)
	case closed:
		okN, failN := t.counts(e, now)
		total := okN + failN
		rateTripped := t.o.ErrorRateThreshold > 0 && total >= t.o.MinRequests && total > 0 &&
			float64(failN)/float64(total) >= t.o.ErrorRateThreshold
		if (t.o.FailureThreshold > 0 && e.consecutive >= t.o.FailureThreshold) || rateTripped {
			e.openedAt = now
			t.transition(name, e, open)
		}
	}
}

func (t *Tracker) transition(name string, e *entry, to circuit) {
	from := e.state
	e.state = to
	if t.onChange != nil && from != to {
		t.onChange(name, circuitName(from), circuitName(to))
	}
}

func circuitName(c circuit) string {
	switch c {
	case open:
		return "open"
	case halfOpen:
		return "half_open"
	}
	return "closed"
}

func (t *Tracker) bucketFor(e *entry, now time.Time) *bucket {
	width := t.o.Window / buckets
	start := now.Truncate(width)
	b := &e.ring[(start.UnixNano()/int64(width))%buckets]
	if !b.start.Equal(start) {
		*b = bucket{start: start}
	}
	return b
}

func (t *Tracker) counts(e *entry, now time.Time) (ok, fail int) {
	for i := range e.ring {
		b := &e.ring[i]
		if !b.start.IsZero() && now.Sub(b.start) < t.o.Window {
			ok += b.ok
			fail += b.fail
		}
	}
	return ok, fail
}

// State reports a provider's health for /health: unhealthy while its circuit
// is open, degraded while probing or while recent traffic shows failures,
// healthy otherwise (including no traffic yet).
func (t *Tracker) State(name string, enabled bool) State {
	if !enabled {
		return Disabled
	}
	t.mu.RLock()
	e := t.byKey[name]
	t.mu.RUnlock()
	if e == nil {
		return Healthy
	}
	now := t.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.state {
	case open:
		return Unhealthy
	case halfOpen:
		return Degraded
	}
	okN, failN := t.counts(e, now)
	if e.consecutive > 0 || (failN > 0 && float64(failN)/float64(okN+failN) >= 0.1) {
		return Degraded
	}
	return Healthy
}
