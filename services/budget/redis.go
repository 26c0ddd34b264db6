package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisTracker is the Tracker shared by every gateway instance. Per counter
// (kind, id, period start) it keeps three keys: the settled spend (":s", an
// integer of nano-dollars), the open holds (":h", request id → amount plus
// their "sum") and the holds' expiry times (":z"). Each request has a record
// (":req:<id>") listing its scopes and holds, which Settle consumes exactly
// once inside a Lua script.
//
// A spend counter is created from the usage table with SET NX, so when two
// instances load it at once only one value is kept and nothing is counted
// twice. Scripts refuse to work on a counter that does not exist yet; the Go
// side then loads it and runs the script again.
//
// On Redis Cluster, put a hash tag in the prefix (e.g. "{gw}:") so a
// request's keys share one slot.
type RedisTracker struct {
	client redis.UniversalClient
	prefix string
	load   SpendLoader
	clock  func() time.Time
	ttl    time.Duration

	// loads coalesces concurrent first uses of a counter on this instance
	// into one query of the usage table.
	loadMu sync.Mutex
	loads  map[string]*flight
}

type flight struct {
	done chan struct{}
	err  error
}

var _ Tracker = (*RedisTracker)(nil)

// NewRedis returns a Redis tracker; clock nil means time.Now.
func NewRedis(client redis.UniversalClient, prefix string, load SpendLoader, clock func() time.Time) *RedisTracker {
	if clock == nil {
		clock = time.Now
	}
	return &RedisTracker{client: client, prefix: prefix, load: load, clock: clock, ttl: DefaultReservationTTL,
		loads: map[string]*flight{}}
}

// SetReservationTTL changes how long an unsettled reservation holds budget.
func (t *RedisTracker) SetReservationTTL(d time.Duration) { t.ttl = d }

// settledMark replaces a request record once it is settled, so a second
// Settle is a no-op rather than a second charge.
const settledMark = "settled"

// budgetReserveScript checks every counter and holds the estimate in each.
//
// KEYS: per counter s, h, z; then the request record key.
// ARGV: now ms, amount, hold expiry ms, hold ttl ms, request ttl ms, request
// id, record, then per counter its limit (0 = none).
// Returns {-1, i} when counter i is not loaded, {-2} for a duplicate id,
// {0, i, spend} for a refusal by counter i, {1} when held.
var budgetReserveScript = redis.NewScript(`
local function int(x) return string.format('%d', x) end
local now, amount, exp = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local holdTTL, reqTTL, id, record = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local n = (#KEYS - 1) / 3
for i = 1, n do
  if redis.call('EXISTS', KEYS[3*i-2]) == 0 then return {-1, i} end
end
if redis.call('EXISTS', KEYS[#KEYS]) == 1 then return {-2} end
for i = 1, n do
  local s, h, z = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  if #gone > 0 then
    local freed = 0
    for _, r in ipairs(gone) do
      freed = freed + tonumber(redis.call('HGET', h, r) or '0')
      redis.call('HDEL', h, r)
    end
    redis.call('ZREMRANGEBYSCORE', z, '-inf', now)
    redis.call('HINCRBY', h, 'sum', int(-freed))
  end
  local limit = tonumber(ARGV[7 + i])
  local spend = tonumber(redis.call('GET', s))
  local reserved = tonumber(redis.call('HGET', h, 'sum') or '0')
  if limit > 0 and (spend >= limit or spend + reserved + amount > limit) then
    return {0, i, spend}
  end
end
for i = 1, n do
  local h, z = KEYS[3*i-1], KEYS[3*i]
  if tonumber(ARGV[7 + i]) > 0 and amount > 0 then
    redis.call('HSET', h, id, int(amount))
    redis.call('HINCRBY', h, 'sum', int(amount))
    redis.call('ZADD', z, int(exp), id)
    redis.call('PEXPIRE', h, holdTTL)
    redis.call('PEXPIRE', z, holdTTL)
  end
end
redis.call('SET', KEYS[#KEYS], record, 'PX', reqTTL)
return {1}
`)

// budgetSettleScript consumes a request record: drops its holds and charges
// the real cost to the current periods' counters.
//
// KEYS: the request record; per held counter h, z; per current counter s.
// ARGV: the record as read, amount, request id, number of held counters.
// Returns {0} when already settled (or the record changed), {-1, i} when
// current counter i is not loaded, {1} when settled.
var budgetSettleScript = redis.NewScript(`
local function int(x) return string.format('%d', x) end
local record, amount, id, nheld = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
if redis.call('GET', KEYS[1]) ~= record then return {0} end
local first = 2 + 2 * nheld
for k = first, #KEYS do
  if redis.call('EXISTS', KEYS[k]) == 0 then return {-1, k - first + 1} end
end
redis.call('SET', KEYS[1], '` + settledMark + `', 'KEEPTTL')
for i = 1, nheld do
  local h, z = KEYS[2*i], KEYS[2*i+1]
  local a = redis.call('HGET', h, id)
  if a then
    redis.call('HINCRBY', h, 'sum', int(-tonumber(a)))
    redis.call('HDEL', h, id)
    redis.call('ZREM', z, id)
  end
end
if amount > 0 then
  for k = first, #KEYS do
    redis.call('INCRBY', KEYS[k], int(amount))
  end
end
return {1}
`)

// record is what a request's reservation leaves for Settle.
type record struct {
	Scopes []recordScope `json:"scopes"`
	Held   []string      `json:"held"` // counter bases holding the estimate
}

type recordScope struct {
	Kind   string `json:"k"`
	ID     string `json:"i"`
	Period Period `json:"p"`
}

func (t *RedisTracker) base(kind, id string, p Period, start time.Time) string {
	s := "total"
	if !start.IsZero() {
		s = strconv.FormatInt(start.Unix(), 10)
	}
	return t.prefix + "bud:{" + kind + ":" + id + "}:" + string(p) + ":" + s
}

func (t *RedisTracker) reqKey(requestID string) string { return t.prefix + "bud:req:" + requestID }

// ensure creates a counter from the usage table unless it exists. Concurrent
// calls for one counter share one load; a load that starts after the counter
// was created finds it and queries nothing.
func (t *RedisTracker) ensure(ctx context.Context, kind, id string, p Period, now time.Time) error {
	start := PeriodStart(p, now)
	key := t.base(kind, id, p, start) + ":s"
	t.loadMu.Lock()
	f := t.loads[key]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		t.loads[key] = f
		t.loadMu.Unlock()
		f.err = t.create(ctx, key, kind, id, p, start, now)
		t.loadMu.Lock()
		delete(t.loads, key)
		t.loadMu.Unlock()
		close(f.done)
		return f.err
	}
	t.loadMu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *RedisTracker) create(ctx context.Context, key, kind, id string, p Period, start, now time.Time) error {
	n, err := t.client.Exists(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("budget: redis: %w", err)
	}
	if n == 1 {
		return nil
	}
	v, err := loadSpend(ctx, t.load, kind, id, start)
	if err != nil {
		return err
	}
	var ttl time.Duration // a total counter never expires
	if end := PeriodEnd(p, now); !end.IsZero() {
		ttl = end.Sub(now) + 24*time.Hour
	}
	// NX: another instance may have created it meanwhile; its value stands.
	if err := t.client.SetNX(ctx, key, v, ttl).Err(); err != nil {
		return fmt.Errorf("budget: redis: %w", err)
	}
	return nil
}

// maxLoads bounds the load-and-retry loop; a counter expiring between the
// load and the script is possible once, not repeatedly.
const maxLoads = 8

// Reserve implements Tracker.
func (t *RedisTracker) Reserve(ctx context.Context, requestID string, scopes []Scope, estimate float64) error {
	now := t.clock()
	amount := nano(estimate)
	var (
		keys   []string
		limits []any
		reps   []Scope // the scope each counter stands for
		rec    record
		seen   = map[string]bool{}
	)
	for _, s := range scopes {
		rec.Scopes = append(rec.Scopes, recordScope{Kind: s.Kind, ID: s.ID, Period: s.Period})
		b := t.base(s.Kind, s.ID, s.Period, PeriodStart(s.Period, now))
		if seen[b] {
			continue
		}
		seen[b] = true
		keys = append(keys, b+":s", b+":h", b+":z")
		limits = append(limits, nano(s.Limit))
		reps = append(reps, s)
		if s.Limit > 0 && amount > 0 {
			rec.Held = append(rec.Held, b)
		}
	}
	keys = append(keys, t.reqKey(requestID))
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	args := append([]any{now.UnixMilli(), amount, now.Add(t.ttl).UnixMilli(), t.ttl.Milliseconds(),
		requestTTL.Milliseconds(), requestID, string(raw)}, limits...)

	for range maxLoads {
		res, err := budgetReserveScript.Run(ctx, t.client, keys, args...).Int64Slice()
		if err != nil {
			return fmt.Errorf("budget: redis: %w", err)
		}
		switch res[0] {
		case 1:
			return nil
		case -2:
			return ErrDuplicate
		case -1:
			s := reps[res[1]-1]
			if err := t.ensure(ctx, s.Kind, s.ID, s.Period, now); err != nil {
				return err
			}
		default:
			return exceeded(reps[res[1]-1], res[2], now)
		}
	}
	return errors.New("budget: redis: counters keep disappearing")
}

// Settle implements Tracker.
func (t *RedisTracker) Settle(ctx context.Context, requestID string, actual float64) error {
	key := t.reqKey(requestID)
	raw, err := t.client.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) || raw == settledMark {
		return nil
	}
	if err != nil {
		return fmt.Errorf("budget: redis: %w", err)
	}
	var rec record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return fmt.Errorf("budget: bad reservation record of %s: %w", requestID, err)
	}
	now := t.clock()
	keys := []string{key}
	for _, b := range rec.Held {
		keys = append(keys, b+":h", b+":z")
	}
	seen := map[string]bool{}
	var cur []recordScope
	for _, s := range rec.Scopes {
		b := t.base(s.Kind, s.ID, s.Period, PeriodStart(s.Period, now))
		if !seen[b] {
			seen[b] = true
			keys = append(keys, b+":s")
			cur = append(cur, s)
		}
	}
	for range maxLoads {
		res, err := budgetSettleScript.Run(ctx, t.client, keys, raw, nano(actual), requestID, len(rec.Held)).Int64Slice()
		if err != nil {
			return fmt.Errorf("budget: redis: %w", err)
		}
		if len(res) != 2 {
			return nil // settled now, or by someone else first
		}
		s := cur[res[1]-1]
		if err := t.ensure(ctx, s.Kind, s.ID, s.Period, now); err != nil {
			return err
		}
	}
	return errors.New("budget: redis: counters keep disappearing")
}

// Spend implements Tracker.
func (t *RedisTracker) Spend(ctx context.Context, kind, id string, p Period) (float64, error) {
	now := t.clock()
	key := t.base(kind, id, p, PeriodStart(p, now)) + ":s"
	for range maxLoads {
		v, err := t.client.Get(ctx, key).Int64()
		if err == nil {
			return usd(v), nil
		}
		if !errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("budget: redis: %w", err)
		}
		if err := t.ensure(ctx, kind, id, p, now); err != nil {
			return 0, err
		}
	}
	return 0, errors.New("budget: redis: counters keep disappearing")
}
