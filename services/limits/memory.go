package limits

import (
	"context"
	"sync"
	"time"
)

const (
	shardCount = 64
	// idleAfter is how long a window may go unwritten before it can be
	// evicted; twice the window, so an evicted window was certainly empty.
	idleAfter  = 2 * Window
	sweepEvery = 30 * time.Second
)

// Memory is the in-process limiter: an exact sliding-window log per (scope,
// id). Windows live in a sharded map and each has its own mutex, so requests
// of different keys never contend; a Reserve over several rules locks its
// windows in key order, which makes it atomic without deadlocks. Only limited
// rules get a window, and windows idle for two minutes are evicted when their
// shard is next used, so memory is bounded by the limits themselves.
type Memory struct {
	clock  func() time.Time
	shards [shardCount]shard
}

var _ Limiter = (*Memory)(nil)

type shard struct {
	mu        sync.Mutex
	windows   map[string]*window
	lastSweep int64
}

// window is the log of one (scope, id): entries in time order, from which
// expired ones are pruned on every access.
type window struct {
	mu       sync.Mutex
	key      string
	entries  []entry
	firstSeq int64            // sequence number of entries[0]
	byID     map[string]int64 // reservation id → sequence number
	count    int64            // live entries (RPM)
	sum      int64            // tokens of live entries (TPM)
	lastUse  int64            // unix nanos of the last write
	dead     bool             // evicted: whoever holds a pointer must look again
}

type entry struct {
	at      int64 // unix nanos
	tokens  int64
	id      string
	gone    bool // released; left as a tombstone until it expires
	settled bool
}

// NewMemory returns an in-process limiter; clock nil means time.Now.
func NewMemory(clock func() time.Time) *Memory {
	if clock == nil {
		clock = time.Now
	}
	m := &Memory{clock: clock}
	for i := range m.shards {
		m.shards[i].windows = map[string]*window{}
	}
	return m
}

func (m *Memory) shardOf(key string) *shard {
	// FNV-1a, inline so the hot path does not allocate a hasher.
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return &m.shards[h%shardCount]
}

func (m *Memory) window(key string, create bool, now int64) *window {
	s := m.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if now-s.lastSweep > int64(sweepEvery) {
		s.lastSweep = now
		s.sweep(now)
	}
	w := s.windows[key]
	if w == nil && create {
		w = &window{key: key, byID: map[string]int64{}, lastUse: now}
		s.windows[key] = w
	}
	return w
}

// sweep evicts idle windows; the shard lock is held. A window busy right now
// is skipped rather than waited for.
func (s *shard) sweep(now int64) {
	for k, w := range s.windows {
		if !w.mu.TryLock() {
			continue
		}
		if now-w.lastUse > int64(idleAfter) {
			w.dead = true
			delete(s.windows, k)
		}
		w.mu.Unlock()
	}
}

func (w *window) prune(now int64) {
	cutoff := now - int64(Window)
	i := 0
	for ; i < len(w.entries); i++ {
		e := &w.entries[i]
		if !e.gone && e.at > cutoff {
			break
		}
		if !e.gone {
			w.count--
			w.sum -= e.tokens
			delete(w.byID, e.id)
		}
		*e = entry{} // drop the id string
	}
	if i > 0 {
		w.entries = w.entries[i:]
		w.firstSeq += int64(i)
	}
}

func (w *window) find(id string) *entry {
	seq, ok := w.byID[id]
	if !ok {
		return nil
	}
	return &w.entries[seq-w.firstSeq]
}

// nthLive returns the time of the n-th (0-based) live entry.
func (w *window) nthLive(n int64) (int64, bool) {
	for i := range w.entries {
		if w.entries[i].gone {
			continue
		}
		if n == 0 {
			return w.entries[i].at, true
		}
		n--
	}
	return 0, false
}

// check returns the denial of rule r for a request of tokens, or nil.
func (w *window) check(r Rule, tokens, now int64) *Denial {
	nowT := time.Unix(0, now)
	if r.RPM > 0 && w.count+1 > r.RPM {
		reset := nowT.Add(Window)
		if at, ok := w.nthLive(w.count - r.RPM); ok {
			reset = time.Unix(0, at).Add(Window)
		}
		return newDenial(r, LimitRPM, r.RPM, reset, nowT)
	}
	if r.TPM > 0 && w.sum+tokens > r.TPM {
		reset := nowT.Add(Window)
		if tokens <= r.TPM {
			need := w.sum + tokens - r.TPM
			for i := range w.entries {
				e := &w.entries[i]
				if e.gone {
					continue
				}
				need -= e.tokens
				if need <= 0 {
					reset = time.Unix(0, e.at).Add(Window)
					break
				}
			}
		}
		return newDenial(r, LimitTPM, r.TPM, reset, nowT)
	}
	return nil
}

func (w *window) status(r Rule, now int64) Status {
	if r.RPM <= 0 {
		return Status{}
	}
	reset := time.Unix(0, now).Add(Window)
	if at, ok := w.nthLive(0); ok {
		reset = time.Unix(0, at).Add(Window)
	}
	return Status{Limit: r.RPM, Remaining: max(r.RPM-w.count, 0), ResetAt: reset}
}

func (w *window) record(id string, tokens, now int64) {
	w.byID[id] = w.firstSeq + int64(len(w.entries))
	w.entries = append(w.entries, entry{at: now, tokens: tokens, id: id})
	w.count++
	w.sum += tokens
	w.lastUse = now
}

// lockSet is the windows of one call, locked in key order.
type lockSet struct {
	ofRule []*window // per rule; nil for an unlimited rule
	sorted []*window // distinct, in key order
}

func (m *Memory) lockRules(rules []Rule, now int64) lockSet {
	for {
		ls := lockSet{ofRule: make([]*window, len(rules))}
		for i, r := range rules {
			if !r.limited() {
				continue
			}
			w := m.window(windowKey(r), true, now)
			ls.ofRule[i] = w
			dup := false
			for _, o := range ls.sorted {
				if o == w {
					dup = true
					break
				}
			}
			if !dup {
				ls.sorted = append(ls.sorted, w)
			}
		}
		// Insertion sort: a request has one to three rules.
		for i := 1; i < len(ls.sorted); i++ {
			for j := i; j > 0 && ls.sorted[j].key < ls.sorted[j-1].key; j-- {
				ls.sorted[j], ls.sorted[j-1] = ls.sorted[j-1], ls.sorted[j]
			}
		}
		dead := false
		for _, w := range ls.sorted {
			w.mu.Lock()
			dead = dead || w.dead
		}
		if !dead {
			return ls
		}
		// Evicted between lookup and lock: look the windows up again.
		ls.unlock()
	}
}

func (ls lockSet) unlock() {
	for _, w := range ls.sorted {
		w.mu.Unlock()
	}
}

// Reserve implements Limiter.
func (m *Memory) Reserve(_ context.Context, id string, rules []Rule, tokens int64) (Reservation, []Status, *Denial, error) {
	tokens = max(tokens, 0)
	nowT := m.clock()
	now := nowT.UnixNano()
	ls := m.lockRules(rules, now)
	defer ls.unlock()

	for _, w := range ls.sorted {
		w.prune(now)
		if w.find(id) != nil {
			return Reservation{}, nil, nil, ErrDuplicate
		}
	}
	statuses := make([]Status, len(rules))
	for i, r := range rules {
		if w := ls.ofRule[i]; w != nil {
			if d := w.check(r, tokens, now); d != nil {
				for j, r := range rules {
					if w := ls.ofRule[j]; w != nil {
						statuses[j] = w.status(r, now)
					}
				}
				return Reservation{}, statuses, d, nil
			}
		}
	}
	for _, w := range ls.sorted {
		w.record(id, tokens, now)
	}
	for i, r := range rules {
		if w := ls.ofRule[i]; w != nil {
			statuses[i] = w.status(r, now)
		}
	}
	return Reservation{ID: id, Rules: append([]Rule(nil), rules...), Tokens: tokens, At: nowT}, statuses, nil, nil
}

// each runs f on every existing window of r's rules, one at a time, skipping
// duplicates. Settle and Release need no cross-window atomicity: each window
// is corrected on its own and a window that has gone had expired anyway.
func (m *Memory) each(r Reservation, f func(w *window, now int64)) {
	now := m.clock().UnixNano()
	var done []string
	for _, rule := range r.Rules {
		if !rule.limited() {
			continue
		}
		key := windowKey(rule)
		seen := false
		for _, k := range done {
			seen = seen || k == key
		}
		if seen {
			continue
		}
		done = append(done, key)
		w := m.window(key, false, now)
		if w == nil {
			continue
		}
		w.mu.Lock()
		if !w.dead {
			w.prune(now)
			f(w, now)
		}
		w.mu.Unlock()
	}
}

// Settle implements Limiter.
func (m *Memory) Settle(_ context.Context, r Reservation, actualTokens int64) error {
	actualTokens = max(actualTokens, 0)
	m.each(r, func(w *window, now int64) {
		e := w.find(r.ID)
		if e == nil || e.settled {
			return
		}
		w.sum += actualTokens - e.tokens
		e.tokens = actualTokens
		e.settled = true
		w.lastUse = now
	})
	return nil
}

// Release implements Limiter.
func (m *Memory) Release(_ context.Context, r Reservation) error {
	m.each(r, func(w *window, _ int64) {
		e := w.find(r.ID)
		if e == nil {
			return
		}
		w.count--
		w.sum -= e.tokens
		delete(w.byID, r.ID)
		e.gone = true
	})
	return nil
}

// Peek implements Limiter. It neither records nor creates windows.
func (m *Memory) Peek(_ context.Context, rules []Rule, tokens int64) (*Denial, error) {
	tokens = max(tokens, 0)
	now := m.clock().UnixNano()
	for _, r := range rules {
		if !r.limited() {
			continue
		}
		w := m.window(windowKey(r), false, now)
		if w == nil {
			w = &window{} // empty: only an oversized request is refused
		}
		w.mu.Lock()
		w.prune(now) // harmless on an evicted window: nobody else writes it
		d := w.check(r, tokens, now)
		w.mu.Unlock()
		if d != nil {
			return d, nil
		}
	}
	return nil, nil
}
