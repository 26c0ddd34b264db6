// Package limits enforces requests-per-minute and tokens-per-minute limits
// over a sliding 60-second window, per API key and per provider.
//
// A request reserves before it is sent: one request and an estimate of its
// tokens are recorded under the request's id in every rule's window, or in
// none if any rule refuses (all or nothing, so a request refused by its
// provider's limit does not use up its key's). After the call the estimate is
// replaced by the upstream's real token count (Settle), or the reservation is
// removed if the request never reached the upstream (Release). Both are
// idempotent, so the middleware can call them from a defer without tracking
// what it already did.
//
// Two backends share these semantics: Memory (per process) and Redis (shared by
// every gateway instance, atomic through Lua scripts). Failover puts Memory, or
// a 503, behind Redis while Redis is unreachable.
package limits

import (
	"context"
	"errors"
	"math"
	"time"
)

// Window is the length of the sliding window.
const Window = 60 * time.Second

// Scope says what a rule limits.
type Scope string

const (
	ScopeKey      Scope = "key"
	ScopeProvider Scope = "provider"
)

// Limit types, as the 429's details.limit_type.
const (
	LimitRPM = "rpm"
	LimitTPM = "tpm"
)

// Rule is the limit of one key or provider. 0 means unlimited for that
// dimension; a rule with both at 0 records nothing.
type Rule struct {
	Scope    Scope
	ID       string
	RPM, TPM int64
}

func (r Rule) limited() bool { return r.RPM > 0 || r.TPM > 0 }

// Denial says which rule refused a request, and when it would fit.
type Denial struct {
	Rule      Rule
	LimitType string // LimitRPM or LimitTPM
	Limit     int64
	Remaining int64 // always 0: kept so the header can be written from it
	// ResetAt is when enough of the window expires for this request to fit
	// (for RPM: when the entry that must leave first leaves). A request larger
	// than the TPM limit on its own never fits; its ResetAt is a full window
	// from now.
	ResetAt    time.Time
	RetryAfter time.Duration
}

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least 1, for
// the Retry-After header.
func (d *Denial) RetryAfterSeconds() int64 {
	s := int64(math.Ceil(d.RetryAfter.Seconds()))
	return max(s, 1)
}

// Status is a rule's RPM state for the X-RateLimit-* headers. Reserve returns
// one per rule, in rule order; Limit is 0 for a rule without an RPM limit.
// Remaining counts this request when it was admitted.
type Status struct {
	Limit, Remaining int64
	ResetAt          time.Time // when the oldest entry in the window expires
}

// Reservation is what Reserve recorded; pass it back to Settle or Release.
type Reservation struct {
	ID     string // request id (plus an attempt suffix for provider rules)
	Rules  []Rule
	Tokens int64
	At     time.Time

	// local is set by Failover when the reservation was made by its
	// in-process fallback, so Settle and Release go there too.
	local bool
}

// Limiter is a rate limiter; every method is safe for concurrent use.
type Limiter interface {
	// Reserve atomically checks every rule and, only if all pass, records one
	// request and `tokens` tokens under reservation id. All or nothing. A
	// refusal is a *Denial with a nil error (and a zero Reservation).
	Reserve(ctx context.Context, id string, rules []Rule, tokens int64) (Reservation, []Status, *Denial, error)
	// Settle replaces the reserved token count with the actual one
	// (idempotent per reservation id; a second call is a no-op).
	Settle(ctx context.Context, r Reservation, actualTokens int64) error
	// Release removes a reservation entirely (the request never reached the
	// upstream) — idempotent.
	Release(ctx context.Context, r Reservation) error
	// Peek reports whether a rule set would currently admit a request with
	// `tokens` tokens, without recording anything.
	Peek(ctx context.Context, rules []Rule, tokens int64) (*Denial, error)
}

// ErrDuplicate is returned by Reserve when id is already reserved in one of
// the rules' windows: reservation ids must be unique (add an attempt suffix).
var ErrDuplicate = errors.New("limits: reservation id already in use")

func newDenial(r Rule, typ string, limit int64, reset, now time.Time) *Denial {
	return &Denial{Rule: r, LimitType: typ, Limit: limit, ResetAt: reset, RetryAfter: max(reset.Sub(now), 0)}
}

// windowKey names one (scope, id) window; the NUL cannot occur in either.
func windowKey(r Rule) string { return string(r.Scope) + "\x00" + r.ID }
