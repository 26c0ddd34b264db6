package budget

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"
)

// ErrDuplicate is returned by Reserve for a request id that already holds an
// unsettled reservation.
var ErrDuplicate = errors.New("budget: request id already reserved")

// MemoryTracker is the in-process Tracker. Each (kind, id, period start)
// counter has its own mutex; a Reserve locks its counters in key order, which
// makes the check-and-reserve atomic across scopes without deadlocks.
type MemoryTracker struct {
	load  SpendLoader
	clock func() time.Time
	ttl   time.Duration

	mu        sync.Mutex // guards counters and lastSweep
	counters  map[string]*counter
	lastSweep time.Time

	reqMu sync.Mutex
	reqs  map[string]*pendingReq
}

var _ Tracker = (*MemoryTracker)(nil)

type counter struct {
	mu        sync.Mutex
	key       string
	periodEnd time.Time // zero for Total
	loaded    bool
	spend     int64 // settled, nano-USD
	reserved  int64 // sum of holds
	holds     map[string]hold
	nextExp   int64 // earliest hold expiry, unix nanos; 0 when none
}

type hold struct{ amount, expires int64 }

// pendingReq is what Settle needs: the scopes to charge and where the holds
// are.
type pendingReq struct {
	scopes []Scope
	held   []*counter
	at     time.Time
}

// NewMemory returns an in-process tracker; clock nil means time.Now.
func NewMemory(load SpendLoader, clock func() time.Time) *MemoryTracker {
	if clock == nil {
		clock = time.Now
	}
	return &MemoryTracker{
		load: load, clock: clock, ttl: DefaultReservationTTL,
		counters: map[string]*counter{}, reqs: map[string]*pendingReq{},
	}
}

// SetReservationTTL changes how long an unsettled reservation holds budget.
func (t *MemoryTracker) SetReservationTTL(d time.Duration) { t.ttl = d }

func counterKey(kind, id string, p Period, start time.Time) string {
	s := "total"
	if !start.IsZero() {
		s = strconv.FormatInt(start.Unix(), 10)
	}
	return kind + "\x00" + id + "\x00" + string(p) + "\x00" + s
}

// counter returns the counter of a scope's current period, loaded.
func (t *MemoryTracker) counter(ctx context.Context, kind, id string, p Period, now time.Time) (*counter, error) {
	start := PeriodStart(p, now)
	key := counterKey(kind, id, p, start)
	t.mu.Lock()
	if now.Sub(t.lastSweep) > time.Minute {
		t.lastSweep = now
		t.sweep(now)
	}
	c := t.counters[key]
	if c == nil {
		c = &counter{key: key, periodEnd: PeriodEnd(p, now), holds: map[string]hold{}}
		t.counters[key] = c
	}
	t.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		// Loaded under the counter's lock, so concurrent first requests
		// load once and wait for it.
		v, err := loadSpend(ctx, t.load, kind, id, start)
		if err != nil {
			return nil, err
		}
		c.spend += v
		c.loaded = true
	}
	return c, nil
}

// sweep drops counters of periods that ended over an hour ago and hold
// nothing, and request records nobody settled; t.mu is held.
func (t *MemoryTracker) sweep(now time.Time) {
	for k, c := range t.counters {
		if c.periodEnd.IsZero() || now.Sub(c.periodEnd) < time.Hour || !c.mu.TryLock() {
			continue
		}
		c.expire(now.UnixNano())
		if len(c.holds) == 0 {
			delete(t.counters, k)
		}
		c.mu.Unlock()
	}
	t.reqMu.Lock()
	for id, p := range t.reqs {
		if p != nil && now.Sub(p.at) > requestTTL {
			delete(t.reqs, id)
		}
	}
	t.reqMu.Unlock()
}

// expire drops holds past their expiry; c.mu is held.
func (c *counter) expire(now int64) {
	if c.nextExp == 0 || now < c.nextExp {
		return
	}
	c.nextExp = 0
	for id, h := range c.holds {
		if h.expires <= now {
			c.reserved -= h.amount
			delete(c.holds, id)
			continue
		}
		if c.nextExp == 0 || h.expires < c.nextExp {
			c.nextExp = h.expires
		}
	}
}

func lockSorted(cs []*counter) []*counter {
	var out []*counter
	for _, c := range cs {
		dup := false
		for _, o := range out {
			dup = dup || o == c
		}
		if !dup {
			out = append(out, c)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].key < out[j-1].key; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	for _, c := range out {
		c.mu.Lock()
	}
	return out
}

func unlockAll(cs []*counter) {
	for _, c := range cs {
		c.mu.Unlock()
	}
}

// Reserve implements Tracker.
func (t *MemoryTracker) Reserve(ctx context.Context, requestID string, scopes []Scope, estimate float64) error {
	now := t.clock()
	amount := nano(estimate)
	cs := make([]*counter, len(scopes))
	for i, s := range scopes {
		c, err := t.counter(ctx, s.Kind, s.ID, s.Period, now)
		if err != nil {
			return err
		}
		cs[i] = c
	}

	// Claim the id first (a nil entry means "being reserved"), so the
	// global map's lock is not held while counters are locked.
	t.reqMu.Lock()
	if _, ok := t.reqs[requestID]; ok {
		t.reqMu.Unlock()
		return ErrDuplicate
	}
	t.reqs[requestID] = nil
	t.reqMu.Unlock()

	p, err := t.hold(requestID, scopes, cs, amount, now)
	t.reqMu.Lock()
	if err != nil {
		delete(t.reqs, requestID)
	} else {
		t.reqs[requestID] = p
	}
	t.reqMu.Unlock()
	return err
}

func (t *MemoryTracker) hold(requestID string, scopes []Scope, cs []*counter, amount int64, now time.Time) (*pendingReq, error) {
	locked := lockSorted(cs)
	defer unlockAll(locked)
	n := now.UnixNano()
	for i, s := range scopes {
		c := cs[i]
		c.expire(n)
		if refuses(nano(s.Limit), c.spend, c.reserved, amount) {
			return nil, exceeded(s, c.spend, now)
		}
	}
	p := &pendingReq{scopes: append([]Scope(nil), scopes...), at: now}
	exp := n + int64(t.ttl)
	for i, s := range scopes {
		c := cs[i]
		if s.Limit <= 0 || amount == 0 {
			continue // nothing to hold against
		}
		if _, ok := c.holds[requestID]; ok {
			continue // the same counter twice
		}
		c.holds[requestID] = hold{amount: amount, expires: exp}
		c.reserved += amount
		if c.nextExp == 0 || exp < c.nextExp {
			c.nextExp = exp
		}
		p.held = append(p.held, c)
	}
	return p, nil
}

// Settle implements Tracker.
func (t *MemoryTracker) Settle(ctx context.Context, requestID string, actual float64) error {
	t.reqMu.Lock()
	p := t.reqs[requestID]
	t.reqMu.Unlock()
	if p == nil {
		return nil
	}
	now := t.clock()
	// Load the current periods' counters before claiming the request, so a
	// failed load leaves it settleable by a retry.
	cur := make([]*counter, len(p.scopes))
	for i, s := range p.scopes {
		c, err := t.counter(ctx, s.Kind, s.ID, s.Period, now)
		if err != nil {
			return err
		}
		cur[i] = c
	}
	t.reqMu.Lock()
	if t.reqs[requestID] != p {
		t.reqMu.Unlock()
		return nil // settled concurrently
	}
	delete(t.reqs, requestID)
	t.reqMu.Unlock()

	// Hold removal and charge happen under the same locks, so no concurrent
	// Reserve sees the request counted in neither.
	locked := lockSorted(append(append([]*counter(nil), p.held...), cur...))
	defer unlockAll(locked)
	for _, c := range p.held {
		if h, ok := c.holds[requestID]; ok {
			c.reserved -= h.amount
			delete(c.holds, requestID)
		}
	}
	amount := nano(actual)
	var charged []*counter
	for _, c := range cur {
		dup := false
		for _, o := range charged {
			dup = dup || o == c
		}
		if !dup {
			c.spend += amount
			charged = append(charged, c)
		}
	}
	return nil
}

// Spend implements Tracker.
func (t *MemoryTracker) Spend(ctx context.Context, kind, id string, p Period) (float64, error) {
	c, err := t.counter(ctx, kind, id, p, t.clock())
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return usd(c.spend), nil
}

// has reports whether requestID holds an unsettled reservation here (for
// Failover's routing of Settle).
func (t *MemoryTracker) has(requestID string) bool {
	t.reqMu.Lock()
	defer t.reqMu.Unlock()
	return t.reqs[requestID] != nil
}
