package gateway

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/limits"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
)

// Options tunes attempts.
type Options struct {
	// Timeout bounds one upstream attempt, streams included (504 when hit
	// before the first byte).
	Timeout time.Duration
	// Retries is how many times one target is retried on a retryable failure
	// before the first byte, before moving to the next target.
	Retries       int
	RetryBackoff  time.Duration
	RetryAfterCap time.Duration
}

// Health is the circuit-breaker view of providers; nil allows everything.
type Health interface {
	// Allow reports whether a request may be sent to the provider now.
	Allow(provider string) bool
	// Record reports the outcome of an attempt (ok=false for upstream faults
	// only, never for client errors).
	Record(provider string, ok bool)
}

// Observer receives per-attempt facts for metrics; nil ignores them.
type Observer interface {
	UpstreamError(provider, kind string)
	Retry(provider string)
}

// Service runs model calls.
type Service struct {
	reg     *provider.Registry
	limiter limits.Limiter
	health  Health
	obs     Observer
	opts    Options
}

// New builds the service; limiter, health and obs may be nil.
func New(reg *provider.Registry, limiter limits.Limiter, health Health, obs Observer, o Options) *Service {
	if o.Timeout <= 0 {
		o.Timeout = 120 * time.Second
	}
	return &Service{reg: reg, limiter: limiter, health: health, obs: obs, opts: o}
}

// Meta says who serves a call; handlers turn it into X-Gateway-* headers.
type Meta struct {
	Provider string
	Model    string
}

// EventWriter writes canonical events in a client's wire format.
type EventWriter interface {
	Write(ev llm.Event) error
	WriteError(e *apierr.Error) error
}

// OpenStream commits the response (status, headers) when the first upstream
// event is in hand and returns the writer for the rest.
type OpenStream func(Meta) (EventWriter, error)

// Complete sends a non-streaming call through the plan.
func (s *Service) Complete(ctx context.Context, call *Call) (*llm.Response, error) {
	var resp *llm.Response
	err := s.attempts(ctx, call, func(actx context.Context, c provider.Client, t provider.Target) error {
		r, err := c.Complete(actx, t, call.Request)
		if err != nil {
			return err
		}
		resp = r
		call.Usage, call.UsageKnown = r.Usage, true
		return nil
	})
	if err != nil {
		return nil, s.fail(call, err)
	}
	call.Status = http.StatusOK
	return resp, nil
}

// Stream sends a streaming call. Before the first event reached the client,
// failures fall back like Complete; after it, an error ends the stream with an
// error event and is recorded on the call.
func (s *Service) Stream(ctx context.Context, call *Call, open OpenStream) error {
	var (
		st    llm.Stream
		first llm.Event
	)
	err := s.attempts(ctx, call, func(actx context.Context, c provider.Client, t provider.Target) error {
		stream, err := c.Stream(actx, t, call.Request)
		if err != nil {
			return err
		}
		ev, err := stream.Next()
		if err != nil {
			stream.Close()
			if errors.Is(err, io.EOF) {
				err = &provider.MalformedError{Err: io.ErrUnexpectedEOF}
			}
			return err
		}
		st, first = stream, ev
		return nil
	})
	if err != nil {
		return s.fail(call, err)
	}
	defer st.Close()
	w, err := open(Meta{Provider: call.Provider, Model: call.UpstreamModel})
	if err != nil {
		return s.fail(call, err)
	}
	call.Streamed = true
	call.Status = http.StatusOK
	textChars := 0
	ev := first
	for {
		switch ev.Type {
		case llm.EventStart, llm.EventEnd:
			if ev.Usage != nil {
				mergeUsage(&call.Usage, ev.Usage, ev.Type == llm.EventEnd)
				call.UsageKnown = call.UsageKnown || ev.Type == llm.EventEnd
			}
		case llm.EventDelta:
			textChars += len(ev.Text) + len(ev.PartialJSON)
		}
		if werr := w.Write(ev); werr != nil {
			// The client went away: stop reading, Close cancels upstream.
			s.endBroken(call, textChars, 499, "client_closed")
			return nil
		}
		var nerr error
		ev, nerr = st.Next()
		if nerr == nil {
			continue
		}
		if errors.Is(nerr, io.EOF) {
			if !call.UsageKnown {
				s.estimateUsage(call, textChars)
			}
			return nil
		}
		if ctx.Err() != nil {
			s.endBroken(call, textChars, 499, "client_closed")
			return nil
		}
		e := s.classify(call.Provider, nerr, true)
		if s.health != nil {
			s.health.Record(call.Provider, false)
		}
		_ = w.WriteError(e)
		s.endBroken(call, textChars, e.Status, string(e.Type))
		return nil
	}
}

// mergeUsage applies a stream's usage figures: start carries input tokens,
// end carries cumulative totals that replace (never add to) what was seen.
func mergeUsage(dst *llm.Usage, u *llm.Usage, final bool) {
	if u.InputTokens > 0 || final {
		if u.InputTokens > 0 || dst.InputTokens == 0 {
			dst.InputTokens = u.InputTokens
		}
	}
	if u.CacheReadTokens > 0 {
		dst.CacheReadTokens = u.CacheReadTokens
	}
	if u.CacheWriteTokens > 0 {
		dst.CacheWriteTokens = u.CacheWriteTokens
	}
	if final || u.OutputTokens > 0 {
		dst.OutputTokens = u.OutputTokens
	}
}

func (s *Service) endBroken(call *Call, textChars, status int, errType string) {
	call.Status, call.ErrorType = status, errType
	if !call.UsageKnown {
		s.estimateUsage(call, textChars)
	}
}

func (s *Service) estimateUsage(call *Call, textChars int) {
	if call.Usage.PromptTokens() == 0 {
		call.Usage.InputTokens = int(EstimatePromptTokens(call.Request))
	}
	if call.Usage.OutputTokens == 0 {
		call.Usage.OutputTokens = estimateOutputTokens(textChars)
	}
}

func (s *Service) fail(call *Call, err error) error {
	e := apierr.From(err)
	call.Status, call.ErrorType = e.Status, string(e.Type)
	return e
}

// attemptFunc performs one upstream attempt against t.
type attemptFunc func(ctx context.Context, c provider.Client, t provider.Target) error

// attempts walks the plan: each candidate is skipped when disabled, its
// circuit is open or its own rate limit is full; otherwise it is tried (and
// retried on retryable failures) until one succeeds or a client error ends
// the walk.
func (s *Service) attempts(ctx context.Context, call *Call, do attemptFunc) error {
	var (
		lastErr  *apierr.Error
		denial   *limits.Denial
		skipped  []map[string]any
		failures []map[string]any
		tried    int
	)
	order := call.Plan.Order()
	for _, cand := range order {
		p := cand.Provider
		switch {
		case !p.Enabled:
			skipped = append(skipped, map[string]any{"provider": p.Name, "reason": "disabled"})
			continue
		case s.health != nil && !s.health.Allow(p.Name):
			skipped = append(skipped, map[string]any{"provider": p.Name, "reason": "circuit_open"})
			continue
		}
		client, ok := s.reg.Client(p.Type)
		if !ok {
			skipped = append(skipped, map[string]any{"provider": p.Name, "reason": "unsupported_type"})
			continue
		}
		target := provider.Target{
			ProviderID: p.ID, ProviderName: p.Name, Type: p.Type, BaseURL: p.BaseURL,
			APIKey: p.APIKey, APIVersion: p.APIVersion, Model: cand.Model,
		}
		for retry := 0; ; retry++ {
			res, d, err := s.reserveProvider(ctx, call, p.ID, p.RPMLimit, p.TPMLimit)
			if err != nil {
				return err
			}
			if d != nil {
				denial = d
				skipped = append(skipped, map[string]any{"provider": p.Name, "reason": "rate_limited"})
				break
			}
			call.Provider, call.UpstreamModel = p.Name, cand.Model
			call.Attempts++
			if retry == 0 {
				tried++ // targets, not attempts: retries of one target are still one target
			}
			aerr := s.runAttempt(ctx, client, target, do)
			s.settleProvider(res, call, aerr == nil)
			if aerr == nil {
				if s.health != nil {
					s.health.Record(p.Name, true)
				}
				return nil
			}
			if ctx.Err() != nil {
				// The client went away; nothing more to try.
				return apierr.InvalidRequestStatus(499, "The client closed the request.", nil).WithCause(ctx.Err())
			}
			e := s.classify(p.Name, aerr, false)
			upstreamFault := isUpstreamFault(aerr)
			if s.health != nil {
				s.health.Record(p.Name, !upstreamFault)
			}
			if s.obs != nil && upstreamFault {
				s.obs.UpstreamError(p.Name, string(e.Type))
			}
			if !retryableTarget(aerr) {
				return e // a client error: another target would answer the same
			}
			lastErr = e
			if retry < s.opts.Retries && retryableSameTarget(aerr) {
				if wait := s.backoff(retry, aerr); sleepCtx(ctx, wait) {
					if s.obs != nil {
						s.obs.Retry(p.Name)
					}
					continue
				}
				return apierr.InvalidRequestStatus(499, "The client closed the request.", nil).WithCause(ctx.Err())
			}
			failures = append(failures, map[string]any{"provider": p.Name, "status": e.Status, "type": e.Type})
			break
		}
	}
	return s.exhausted(call, tried, lastErr, denial, skipped, failures)
}

// exhausted picks the error for a walk in which nothing succeeded.
func (s *Service) exhausted(call *Call, tried int, lastErr *apierr.Error, denial *limits.Denial, skipped, failures []map[string]any) error {
	model := call.Request.Model
	if tried == 0 && denial != nil {
		return providerRateLimit(denial)
	}
	if tried == 1 && len(skipped) == 0 && lastErr != nil {
		return lastErr
	}
	if lastErr != nil && allRateLimited(failures) && len(skipped) == 0 {
		return lastErr
	}
	details := map[string]any{"model": model}
	if len(failures) > 0 {
		details["attempts"] = failures
	}
	if len(skipped) > 0 {
		details["skipped"] = skipped
	}
	msg := "No provider is available for model '" + model + "'."
	if tried > 0 {
		msg = "Every provider for model '" + model + "' failed."
	}
	return apierr.Unavailable(msg, details)
}

func allRateLimited(failures []map[string]any) bool {
	if len(failures) == 0 {
		return false
	}
	for _, f := range failures {
		if f["status"] != http.StatusTooManyRequests {
			return false
		}
	}
	return true
}

func providerRateLimit(d *limits.Denial) *apierr.Error {
	secs := int(d.RetryAfter.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return apierr.RateLimit("The provider's "+d.LimitType+" limit is reached; retry later.", map[string]any{
		"limit": d.Limit, "remaining": 0, "reset_at": d.ResetAt.UTC().Format(time.RFC3339),
		"scope": "provider", "limit_type": d.LimitType,
	}).WithHeader("Retry-After", strconv.Itoa(secs))
}

func (s *Service) reserveProvider(ctx context.Context, call *Call, id string, rpm, tpm int64) (*limits.Reservation, *limits.Denial, error) {
	if s.limiter == nil || (rpm <= 0 && tpm <= 0) {
		return nil, nil, nil
	}
	rid := call.RequestID + "#p" + strconv.Itoa(call.Attempts)
	res, _, d, err := s.limiter.Reserve(ctx, rid, []limits.Rule{{Scope: limits.ScopeProvider, ID: id, RPM: rpm, TPM: tpm}}, call.EstimatedTokens)
	if err != nil {
		return nil, nil, err
	}
	if d != nil {
		return nil, d, nil
	}
	return &res, nil, nil
}

func (s *Service) settleProvider(res *limits.Reservation, call *Call, ok bool) {
	if res == nil {
		return
	}
	tokens := int64(0)
	if ok && call.UsageKnown {
		tokens = int64(call.Usage.TotalTokens())
	} else if ok {
		tokens = res.Tokens // streams settle from the estimate; exact usage arrives later
	}
	_ = s.limiter.Settle(context.WithoutCancel(context.Background()), *res, tokens)
}

func (s *Service) runAttempt(ctx context.Context, c provider.Client, t provider.Target, do attemptFunc) error {
	actx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	err := do(actx, c, t)
	if err != nil || actx.Err() != nil {
		cancel()
		if err == nil {
			err = actx.Err()
		}
		return err
	}
	// A successful stream keeps reading after this returns; its context is
	// released when the stream is closed (the client owns that), so the
	// timeout timer must outlive this function.
	context.AfterFunc(ctx, cancel)
	return nil
}

func (s *Service) backoff(retry int, err error) time.Duration {
	var ue *provider.UpstreamError
	if errors.As(err, &ue) && ue.RetryAfter > 0 {
		if ue.RetryAfter > s.opts.RetryAfterCap && s.opts.RetryAfterCap > 0 {
			return s.opts.RetryAfterCap
		}
		return ue.RetryAfter
	}
	base := s.opts.RetryBackoff << retry
	if base <= 0 {
		return 0
	}
	// Full jitter: spreads retries of many clients hitting one bad upstream.
	return base/2 + time.Duration(rand.Int64N(int64(base/2)+1))
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// retryableTarget: the failure is the upstream's, so another target may work.
func retryableTarget(err error) bool {
	var ue *provider.UpstreamError
	if errors.As(err, &ue) {
		return ue.Retryable() || ue.Status == http.StatusUnauthorized || ue.Status == http.StatusForbidden
	}
	return true // transport errors, timeouts, unreadable replies
}

// retryableSameTarget: idempotent failures worth retrying on the same target
// (connection refused/reset, 502/503/504, 429).
func retryableSameTarget(err error) bool {
	var ue *provider.UpstreamError
	if errors.As(err, &ue) {
		switch ue.Status {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
			return true
		}
		return false
	}
	return isConnError(err)
}

// isUpstreamFault says whether an attempt's failure counts against the
// provider's health (a client's bad request does not).
func isUpstreamFault(err error) bool {
	var ue *provider.UpstreamError
	if errors.As(err, &ue) {
		return ue.Status >= 500 || ue.Status == 0 || ue.Status == http.StatusUnauthorized || ue.Status == http.StatusForbidden
	}
	return true
}

func isConnError(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// classify maps an attempt's failure to the contract's error table.
func (s *Service) classify(providerName string, err error, midStream bool) *apierr.Error {
	var (
		ue *provider.UpstreamError
		me *provider.MalformedError
		ae *apierr.Error
	)
	details := map[string]any{"provider": providerName}
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ue):
		details["status"] = ue.Status
		switch {
		case ue.Status == http.StatusTooManyRequests:
			retry := ue.RetryAfter
			if retry <= 0 {
				retry = time.Second
			}
			details["scope"] = "provider"
			details["limit_type"] = "rpm"
			details["limit"] = 0
			details["remaining"] = 0
			details["reset_at"] = time.Now().Add(retry).UTC().Format(time.RFC3339)
			secs := int((retry + time.Second - 1) / time.Second)
			return apierr.RateLimit("The upstream provider is rate limiting requests: "+ue.Message, details).
				WithHeader("Retry-After", strconv.Itoa(secs)).WithCause(err)
		case ue.Status == 0:
			return apierr.Provider("The upstream provider reported an error: "+ue.Message, details).WithCause(err)
		case ue.Status >= 500, ue.Status == http.StatusUnauthorized, ue.Status == http.StatusForbidden:
			return apierr.Provider("The upstream provider answered with status "+strconv.Itoa(ue.Status)+".", details).WithCause(err)
		default:
			msg := ue.Message
			if msg == "" {
				msg = "The upstream provider rejected the request."
			}
			return apierr.InvalidRequestStatus(ue.Status, msg, details).WithCause(err)
		}
	case errors.As(err, &me):
		return apierr.Provider("The upstream provider sent a reply the gateway could not read.", details).WithCause(err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		if midStream {
			return apierr.Timeout("The upstream provider stopped sending the stream.", details).WithCause(err)
		}
		return apierr.Timeout("The upstream provider did not answer in time.", details).WithCause(err)
	case midStream:
		return apierr.Provider("The upstream stream broke off.", details).WithCause(err)
	default:
		return apierr.Unavailable("The upstream provider could not be reached.", details).WithCause(err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
