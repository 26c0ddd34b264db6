package limits

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyTTL outlives the window a little, so an idle window's keys vanish on
// their own; every write refreshes it.
const keyTTL = Window + 10*time.Second

// Redis is the limiter shared by every gateway instance. Each (scope, id)
// window is a ZSET of reservation ids scored by time in milliseconds plus a
// HASH of their tokens ("t:<id>"), settled flags ("s:<id>") and the running
// token sum ("sum"). One Lua script prunes, checks and records every rule of
// a request, so the check-and-record is atomic across rules and across
// instances. Time comes from the injected clock (instances are NTP-synced),
// which keeps tests deterministic.
//
// The two keys of a window share a hash tag; a request's rules span several
// windows, so on Redis Cluster put a hash tag in the prefix (e.g. "{gw}:") to
// keep every key in one slot.
type Redis struct {
	client redis.UniversalClient
	prefix string
	clock  func() time.Time
}

var _ Limiter = (*Redis)(nil)

// NewRedis returns a Redis limiter; clock nil means time.Now.
func NewRedis(client redis.UniversalClient, prefix string, clock func() time.Time) *Redis {
	if clock == nil {
		clock = time.Now
	}
	return &Redis{client: client, prefix: prefix, clock: clock}
}

// reserveScript checks (and with mode 1 records) one request against every
// rule.
//
// KEYS: zset, hash of each distinct window.
// ARGV: mode (1 reserve, 0 peek), now ms, window ms, ttl ms, id, tokens,
// then per rule: window index (1-based), rpm, tpm.
// Returns {-1} for a duplicate id, else {admitted, denied rule, type (1 rpm,
// 2 tpm), reset ms, then per rule: count, oldest score or -1}.
var reserveScript = redis.NewScript(`
-- Numbers go back to Redis through %d: Lua would print -0 or 1e+15, which
-- HINCRBY rejects.
local function int(x) return string.format('%d', x) end
local mode = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local win = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local id = ARGV[5]
local tokens = tonumber(ARGV[6])
local nwin = #KEYS / 2
local nrules = (#ARGV - 6) / 3
local cutoff = now - win

for w = 1, nwin do
  local z, h = KEYS[2*w-1], KEYS[2*w]
  local old = redis.call('ZRANGEBYSCORE', z, '-inf', cutoff)
  if #old > 0 then
    local freed = 0
    for _, m in ipairs(old) do
      local t = redis.call('HGET', h, 't:' .. m)
      if t then freed = freed + tonumber(t) end
      redis.call('HDEL', h, 't:' .. m, 's:' .. m)
    end
    redis.call('ZREMRANGEBYSCORE', z, '-inf', cutoff)
    redis.call('HINCRBY', h, 'sum', int(-freed))
  end
  if mode == 1 and redis.call('ZSCORE', z, id) then
    return {-1}
  end
end

local function statuses(out)
  for i = 1, nrules do
    local w = tonumber(ARGV[4 + 3*i])
    local z = KEYS[2*w-1]
    local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
    out[#out+1] = redis.call('ZCARD', z)
    out[#out+1] = first[2] and tonumber(first[2]) or -1
  end
  return out
end

for i = 1, nrules do
  local w = tonumber(ARGV[4 + 3*i])
  local rpm = tonumber(ARGV[5 + 3*i])
  local tpm = tonumber(ARGV[6 + 3*i])
  local z, h = KEYS[2*w-1], KEYS[2*w]
  local count = redis.call('ZCARD', z)
  if rpm > 0 and count + 1 > rpm then
    local reset = now + win
    local e = redis.call('ZRANGE', z, count - rpm, count - rpm, 'WITHSCORES')
    if e[2] then reset = tonumber(e[2]) + win end
    return statuses({0, i, 1, reset})
  end
  local sum = tonumber(redis.call('HGET', h, 'sum') or '0')
  if tpm > 0 and sum + tokens > tpm then
    local reset = now + win
    if tokens <= tpm then
      local need = sum + tokens - tpm
      local es = redis.call('ZRANGE', z, 0, -1, 'WITHSCORES')
      for j = 1, #es, 2 do
        need = need - tonumber(redis.call('HGET', h, 't:' .. es[j]) or '0')
        if need <= 0 then
          reset = tonumber(es[j+1]) + win
          break
        end
      end
    end
    return statuses({0, i, 2, reset})
  end
end

if mode == 1 then
  for w = 1, nwin do
    local z, h = KEYS[2*w-1], KEYS[2*w]
    redis.call('ZADD', z, int(now), id)
    redis.call('HSET', h, 't:' .. id, int(tokens))
    redis.call('HINCRBY', h, 'sum', int(tokens))
    redis.call('PEXPIRE', z, int(ttl))
    redis.call('PEXPIRE', h, int(ttl))
  end
end
return statuses({1, 0, 0, 0})
`)

// settleScript replaces a reservation's tokens once. KEYS: zset, hash per
// window; ARGV: id, actual, ttl ms.
var settleScript = redis.NewScript(`
local function int(x) return string.format('%d', x) end
local id, actual, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
for w = 1, #KEYS / 2 do
  local z, h = KEYS[2*w-1], KEYS[2*w]
  local t = redis.call('HGET', h, 't:' .. id)
  if t and redis.call('HEXISTS', h, 's:' .. id) == 0 then
    redis.call('HINCRBY', h, 'sum', int(actual - tonumber(t)))
    redis.call('HSET', h, 't:' .. id, int(actual), 's:' .. id, 1)
    redis.call('PEXPIRE', z, int(ttl))
    redis.call('PEXPIRE', h, int(ttl))
  end
end
return 0
`)

// releaseScript removes a reservation. KEYS: zset, hash per window; ARGV: id.
var releaseScript = redis.NewScript(`
local function int(x) return string.format('%d', x) end
local id = ARGV[1]
for w = 1, #KEYS / 2 do
  local z, h = KEYS[2*w-1], KEYS[2*w]
  local t = redis.call('HGET', h, 't:' .. id)
  if t then
    redis.call('HINCRBY', h, 'sum', int(-tonumber(t)))
    redis.call('HDEL', h, 't:' .. id, 's:' .. id)
    redis.call('ZREM', z, id)
  end
end
return 0
`)

// windows returns the keys of the distinct windows of the limited rules and,
// per rule, its window's 1-based index (0 for an unlimited rule).
func (l *Redis) windows(rules []Rule) (keys []string, index []int) {
	index = make([]int, len(rules))
	seen := map[string]int{}
	for i, r := range rules {
		if !r.limited() {
			continue
		}
		wk := windowKey(r)
		if w, ok := seen[wk]; ok {
			index[i] = w
			continue
		}
		base := l.prefix + "lim:{" + string(r.Scope) + ":" + r.ID + "}"
		keys = append(keys, base+":z", base+":h")
		seen[wk] = len(keys) / 2
		index[i] = len(keys) / 2
	}
	return keys, index
}

func (l *Redis) check(ctx context.Context, mode int, id string, rules []Rule, tokens int64) (admitted bool, st []Status, d *Denial, now time.Time, err error) {
	tokens = max(tokens, 0)
	keys, index := l.windows(rules)
	now = l.clock()
	if len(keys) == 0 {
		return true, make([]Status, len(rules)), nil, now, nil
	}
	var limited []Rule
	args := []any{mode, now.UnixMilli(), Window.Milliseconds(), keyTTL.Milliseconds(), id, tokens}
	for i, r := range rules {
		if index[i] > 0 {
			limited = append(limited, r)
			args = append(args, index[i], r.RPM, r.TPM)
		}
	}
	res, err := reserveScript.Run(ctx, l.client, keys, args...).Int64Slice()
	if err != nil {
		return false, nil, nil, now, fmt.Errorf("limits: redis: %w", err)
	}
	if len(res) == 1 {
		return false, nil, nil, now, ErrDuplicate
	}
	if len(res) != 4+2*len(limited) {
		return false, nil, nil, now, fmt.Errorf("limits: redis: unexpected reply of %d values", len(res))
	}
	st = make([]Status, len(rules))
	j := 0
	for i, r := range rules {
		if index[i] == 0 {
			continue
		}
		if r.RPM > 0 {
			count, oldest := res[4+2*j], res[5+2*j]
			reset := now.Add(Window)
			if oldest >= 0 {
				reset = time.UnixMilli(oldest).Add(Window)
			}
			st[i] = Status{Limit: r.RPM, Remaining: max(r.RPM-count, 0), ResetAt: reset}
		}
		j++
	}
	if res[0] == 1 {
		return true, st, nil, now, nil
	}
	r := limited[res[1]-1]
	typ, limit := LimitRPM, r.RPM
	if res[2] == 2 {
		typ, limit = LimitTPM, r.TPM
	}
	return false, st, newDenial(r, typ, limit, time.UnixMilli(res[3]), now), now, nil
}

// Reserve implements Limiter.
func (l *Redis) Reserve(ctx context.Context, id string, rules []Rule, tokens int64) (Reservation, []Status, *Denial, error) {
	ok, st, d, now, err := l.check(ctx, 1, id, rules, tokens)
	if err != nil || !ok {
		return Reservation{}, st, d, err
	}
	return Reservation{ID: id, Rules: append([]Rule(nil), rules...), Tokens: max(tokens, 0), At: now}, st, nil, nil
}

// Peek implements Limiter.
func (l *Redis) Peek(ctx context.Context, rules []Rule, tokens int64) (*Denial, error) {
	_, _, d, _, err := l.check(ctx, 0, "", rules, tokens)
	return d, err
}

// Settle implements Limiter.
func (l *Redis) Settle(ctx context.Context, r Reservation, actualTokens int64) error {
	keys, _ := l.windows(r.Rules)
	if len(keys) == 0 {
		return nil
	}
	err := settleScript.Run(ctx, l.client, keys, r.ID, max(actualTokens, 0), keyTTL.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("limits: redis: %w", err)
	}
	return nil
}

// Release implements Limiter.
func (l *Redis) Release(ctx context.Context, r Reservation) error {
	keys, _ := l.windows(r.Rules)
	if len(keys) == 0 {
		return nil
	}
	if err := releaseScript.Run(ctx, l.client, keys, r.ID).Err(); err != nil {
		return fmt.Errorf("limits: redis: %w", err)
	}
	return nil
}
