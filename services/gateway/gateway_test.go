package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/health"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/routing"
)

// scripted answers per provider name, in order; the last answer repeats.
type scripted struct {
	mu      sync.Mutex
	answers map[string][]error
	calls   []string
	events  []llm.Event // stream events for successful streams
	failAt  int         // stream: Next returns streamErr after failAt events (0 = never)
	streamE error
}

func (s *scripted) next(t provider.Target) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, t.ProviderName)
	a := s.answers[t.ProviderName]
	if len(a) == 0 {
		return nil
	}
	err := a[0]
	if len(a) > 1 {
		s.answers[t.ProviderName] = a[1:]
	}
	return err
}

func (s *scripted) Complete(ctx context.Context, t provider.Target, req *llm.Request) (*llm.Response, error) {
	if err := s.next(t); err != nil {
		return nil, err
	}
	return &llm.Response{ID: "r1", Model: t.Model, Content: []llm.Block{{Type: llm.BlockText, Text: "hi from " + t.ProviderName}},
		FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

type sliceStream struct {
	evs    []llm.Event
	i      int
	failAt int
	err    error
	closed bool
}

func (s *sliceStream) Next() (llm.Event, error) {
	if s.failAt > 0 && s.i == s.failAt {
		return llm.Event{}, s.err
	}
	if s.i >= len(s.evs) {
		return llm.Event{}, io.EOF
	}
	s.i++
	return s.evs[s.i-1], nil
}
func (s *sliceStream) Close() error { s.closed = true; return nil }

func (s *scripted) Stream(ctx context.Context, t provider.Target, req *llm.Request) (llm.Stream, error) {
	if err := s.next(t); err != nil {
		return nil, err
	}
	return &sliceStream{evs: s.events, failAt: s.failAt, err: s.streamE}, nil
}

func plan(strategy routing.Strategy, providers ...*catalog.Provider) *routing.Plan {
	p := &routing.Plan{Strategy: strategy, InputPricePer1K: 1, OutputPricePer1K: 2}
	for _, pr := range providers {
		p.Candidates = append(p.Candidates, routing.Candidate{Provider: pr, Model: "m-" + pr.Name, Weight: 1})
	}
	return p
}

func prov(name string, enabled bool) *catalog.Provider {
	return &catalog.Provider{ID: name + "-id", Name: name, Type: provider.TypeOpenAI, Enabled: enabled}
}

func newCall(p *routing.Plan) *Call {
	return &Call{RequestID: "req-1", Request: &llm.Request{Model: "alias"}, Plan: p, Started: time.Now()}
}

func service(c provider.Client, h Health) *Service {
	reg := provider.NewRegistryOf(map[provider.Type]provider.Client{provider.TypeOpenAI: c})
	return New(reg, nil, h, nil, Options{Timeout: time.Second, Retries: 0})
}

func TestCompleteFallbackAndErrorMapping(t *testing.T) {
	up500 := &provider.UpstreamError{Status: 500, Message: "boom"}
	up400 := &provider.UpstreamError{Status: 400, Message: "bad thing"}
	up429 := &provider.UpstreamError{Status: 429, Message: "slow down", RetryAfter: 2 * time.Second}
	connRefused := &netErr{syscall.ECONNREFUSED}
	cases := []struct {
		name       string
		strategy   routing.Strategy
		providers  []*catalog.Provider
		answers    map[string][]error
		wantCalls  []string
		wantStatus int
		wantType   apierr.Type
		wantServed string
	}{
		{"simple ok", routing.Simple{}, []*catalog.Provider{prov("a", true)}, nil, []string{"a"}, 200, "", "a"},
		{"fallback skips 5xx", routing.Fallback{}, []*catalog.Provider{prov("a", true), prov("b", true)},
			map[string][]error{"a": {up500}}, []string{"a", "b"}, 200, "", "b"},
		{"fallback skips conn refused", routing.Fallback{}, []*catalog.Provider{prov("a", true), prov("b", true)},
			map[string][]error{"a": {connRefused}}, []string{"a", "b"}, 200, "", "b"},
		{"fallback stops on client error", routing.Fallback{}, []*catalog.Provider{prov("a", true), prov("b", true)},
			map[string][]error{"a": {up400}}, []string{"a"}, 400, apierr.TypeInvalidRequest, ""},
		{"fallback skips disabled", routing.Fallback{}, []*catalog.Provider{prov("a", false), prov("b", true)},
			nil, []string{"b"}, 200, "", "b"},
		{"simple disabled is 503", routing.Simple{}, []*catalog.Provider{prov("a", false)},
			nil, nil, 503, apierr.TypeUnavailable, ""},
		{"simple 5xx is 502", routing.Simple{}, []*catalog.Provider{prov("a", true)},
			map[string][]error{"a": {up500}}, []string{"a"}, 502, apierr.TypeProvider, ""},
		{"simple upstream 401 is 502", routing.Simple{}, []*catalog.Provider{prov("a", true)},
			map[string][]error{"a": {&provider.UpstreamError{Status: 401}}}, []string{"a"}, 502, apierr.TypeProvider, ""},
		{"simple 429 is provider 429", routing.Simple{}, []*catalog.Provider{prov("a", true)},
			map[string][]error{"a": {up429}}, []string{"a"}, 429, apierr.TypeRateLimit, ""},
		{"all fail is 503", routing.Fallback{}, []*catalog.Provider{prov("a", true), prov("b", true)},
			map[string][]error{"a": {up500}, "b": {up500}}, []string{"a", "b"}, 503, apierr.TypeUnavailable, ""},
		{"all 429 is 429", routing.Fallback{}, []*catalog.Provider{prov("a", true), prov("b", true)},
			map[string][]error{"a": {up429}, "b": {up429}}, []string{"a", "b"}, 429, apierr.TypeRateLimit, ""},
		{"timeout is 504", routing.Simple{}, []*catalog.Provider{prov("a", true)},
			map[string][]error{"a": {context.DeadlineExceeded}}, []string{"a"}, 504, apierr.TypeTimeout, ""},
		{"malformed is 502", routing.Simple{}, []*catalog.Provider{prov("a", true)},
			map[string][]error{"a": {&provider.MalformedError{Err: errors.New("x")}}}, []string{"a"}, 502, apierr.TypeProvider, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &scripted{answers: tc.answers}
			call := newCall(plan(tc.strategy, tc.providers...))
			resp, err := service(up, nil).Complete(context.Background(), call)
			if tc.wantStatus == 200 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if call.Provider != tc.wantServed || resp.Content[0].Text != "hi from "+tc.wantServed {
					t.Fatalf("served by %q", call.Provider)
				}
				if got := call.Cost(); got != 10.0/1000*1+5.0/1000*2 {
					t.Fatalf("cost %v", got)
				}
			} else {
				e := apierr.From(err)
				if e.Status != tc.wantStatus || e.Type != tc.wantType {
					t.Fatalf("got %d %s (%v), want %d %s", e.Status, e.Type, err, tc.wantStatus, tc.wantType)
				}
				if call.Status != tc.wantStatus {
					t.Fatalf("call status %d", call.Status)
				}
			}
			if len(up.calls) != len(tc.wantCalls) {
				t.Fatalf("calls %v, want %v", up.calls, tc.wantCalls)
			}
			for i := range up.calls {
				if up.calls[i] != tc.wantCalls[i] {
					t.Fatalf("calls %v, want %v", up.calls, tc.wantCalls)
				}
			}
		})
	}
}

type netErr struct{ errno syscall.Errno }

func (e *netErr) Error() string { return e.errno.Error() }
func (e *netErr) Unwrap() error { return e.errno }

func TestRetrySameTargetThenSucceed(t *testing.T) {
	up := &scripted{answers: map[string][]error{"a": {&provider.UpstreamError{Status: 503}, nil}}}
	reg := provider.NewRegistryOf(map[provider.Type]provider.Client{provider.TypeOpenAI: up})
	s := New(reg, nil, nil, nil, Options{Timeout: time.Second, Retries: 2, RetryBackoff: time.Millisecond})
	call := newCall(plan(routing.Simple{}, prov("a", true)))
	if _, err := s.Complete(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if len(up.calls) != 2 || call.Attempts != 2 {
		t.Fatalf("calls %v attempts %d", up.calls, call.Attempts)
	}
}

// One target retried and still failing passes its own error on (502), not
// "every provider failed" (503): retries do not make it several targets.
func TestRetriedSingleTargetKeepsItsError(t *testing.T) {
	up503 := &provider.UpstreamError{Status: 503}
	up := &scripted{answers: map[string][]error{"a": {up503, up503}}}
	reg := provider.NewRegistryOf(map[provider.Type]provider.Client{provider.TypeOpenAI: up})
	s := New(reg, nil, nil, nil, Options{Timeout: time.Second, Retries: 1, RetryBackoff: time.Millisecond})
	call := newCall(plan(routing.Simple{}, prov("a", true)))
	_, err := s.Complete(context.Background(), call)
	if e := apierr.From(err); e.Status != 502 || e.Type != apierr.TypeProvider || len(up.calls) != 2 {
		t.Fatalf("got %d %s after %d calls, want 502 provider_error after 2", e.Status, e.Type, len(up.calls))
	}
}

func TestNoRetryOnPlain500(t *testing.T) {
	up := &scripted{answers: map[string][]error{"a": {&provider.UpstreamError{Status: 500}, nil}}}
	reg := provider.NewRegistryOf(map[provider.Type]provider.Client{provider.TypeOpenAI: up})
	s := New(reg, nil, nil, nil, Options{Timeout: time.Second, Retries: 2, RetryBackoff: time.Millisecond})
	if _, err := s.Complete(context.Background(), newCall(plan(routing.Simple{}, prov("a", true)))); err == nil {
		t.Fatal("500 is not idempotent-retryable")
	}
	if len(up.calls) != 1 {
		t.Fatalf("calls %v", up.calls)
	}
}

func TestOpenCircuitAnswers503WithoutCalling(t *testing.T) {
	h := health.New(health.Options{FailureThreshold: 2, Cooldown: time.Hour}, nil, nil)
	up := &scripted{answers: map[string][]error{"a": {&provider.UpstreamError{Status: 500}}}}
	s := service(up, h)
	for i := 0; i < 2; i++ {
		_, _ = s.Complete(context.Background(), newCall(plan(routing.Simple{}, prov("a", true))))
	}
	_, err := s.Complete(context.Background(), newCall(plan(routing.Simple{}, prov("a", true))))
	if e := apierr.From(err); e.Status != 503 {
		t.Fatalf("got %d, want 503", e.Status)
	}
	if len(up.calls) != 2 {
		t.Fatalf("an open circuit must not call upstream; calls %v", up.calls)
	}
}

func TestLoadBalanceWeights(t *testing.T) {
	up := &scripted{}
	a, b := prov("a", true), prov("b", true)
	p := &routing.Plan{Strategy: routing.LoadBalance{}, Candidates: []routing.Candidate{
		{Provider: a, Model: "x", Weight: 3}, {Provider: b, Model: "y", Weight: 1}}}
	s := service(up, nil)
	n := 4000
	for i := 0; i < n; i++ {
		if _, err := s.Complete(context.Background(), newCall(p)); err != nil {
			t.Fatal(err)
		}
	}
	countA := 0
	for _, c := range up.calls {
		if c == "a" {
			countA++
		}
	}
	frac := float64(countA) / float64(n)
	if frac < 0.72 || frac > 0.78 {
		t.Fatalf("weight 3:1 gave a share of %.3f for a", frac)
	}
}

type recWriter struct {
	evs  []llm.Event
	errs []*apierr.Error
}

func (w *recWriter) Write(ev llm.Event) error         { w.evs = append(w.evs, ev); return nil }
func (w *recWriter) WriteError(e *apierr.Error) error { w.errs = append(w.errs, e); return nil }

func streamEvents() []llm.Event {
	return []llm.Event{
		{Type: llm.EventStart, ID: "x", Usage: &llm.Usage{InputTokens: 7}},
		{Type: llm.EventBlockStart, Index: 0, Block: &llm.Block{Type: llm.BlockText}},
		{Type: llm.EventDelta, Index: 0, Text: "hello world"},
		{Type: llm.EventBlockStop, Index: 0},
		{Type: llm.EventEnd, FinishReason: llm.FinishStop, Usage: &llm.Usage{InputTokens: 7, OutputTokens: 3}},
	}
}

func TestStreamFallsBackBeforeFirstByteAndCountsUsage(t *testing.T) {
	up := &scripted{answers: map[string][]error{"a": {&provider.UpstreamError{Status: 502}}}, events: streamEvents()}
	call := newCall(plan(routing.Fallback{}, prov("a", true), prov("b", true)))
	w := &recWriter{}
	var meta Meta
	err := service(up, nil).Stream(context.Background(), call, func(m Meta) (EventWriter, error) { meta = m; return w, nil })
	if err != nil {
		t.Fatal(err)
	}
	if meta.Provider != "b" || len(w.evs) != 5 || len(w.errs) != 0 {
		t.Fatalf("meta %+v events %d errs %d", meta, len(w.evs), len(w.errs))
	}
	if call.Usage.InputTokens != 7 || call.Usage.OutputTokens != 3 || call.Status != http.StatusOK {
		t.Fatalf("usage %+v status %d", call.Usage, call.Status)
	}
}

func TestStreamBreaksMidwayEndsWithErrorEvent(t *testing.T) {
	up := &scripted{events: streamEvents(), failAt: 3, streamE: io.ErrUnexpectedEOF}
	call := newCall(plan(routing.Fallback{}, prov("a", true), prov("b", true)))
	w := &recWriter{}
	err := service(up, nil).Stream(context.Background(), call, func(Meta) (EventWriter, error) { return w, nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(up.calls) != 1 {
		t.Fatalf("no fallback after the first byte; calls %v", up.calls)
	}
	if len(w.errs) != 1 || w.errs[0].Status != 502 {
		t.Fatalf("want one 502 error event, got %+v", w.errs)
	}
	if call.Status != 502 || call.Usage.InputTokens != 7 || call.Usage.OutputTokens != 3 {
		t.Fatalf("cut stream billed from what was seen: status %d usage %+v", call.Status, call.Usage)
	}
}
