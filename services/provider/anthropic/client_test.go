package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/provider/anthropic"
)

func maxTokens(n int) *int { return &n }

// request has 2 system words and 4 user words: the mock counts 6 input tokens.
func request(stream bool) *llm.Request {
	return &llm.Request{
		Model:     "alias",
		System:    "be brief",
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "say hello to me"}}}},
		MaxTokens: maxTokens(100),
		Stream:    stream,
		Format:    llm.FormatMessages,
	}
}

func setup(t *testing.T, o provider.HTTPOptions) (*mockupstream.Server, *anthropic.Client) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	m := mockupstream.New()
	hc := provider.NewHTTPClient(o)
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		m.Close()
		goleak.VerifyNone(t, ignore)
	})
	return m, anthropic.New(hc)
}

func target(base, model string) provider.Target {
	return provider.Target{Type: provider.TypeAnthropic, BaseURL: base, APIKey: "sk-ant", Model: model}
}

func drain(s llm.Stream) (string, llm.Event, error) {
	var sb strings.Builder
	var end llm.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return sb.String(), end, err
		}
		switch ev.Type {
		case llm.EventDelta:
			sb.WriteString(ev.Text)
		case llm.EventEnd:
			end = ev
		}
	}
}

func TestCompleteAndStream(t *testing.T) {
	m, c := setup(t, provider.HTTPOptions{})
	tgt := target(m.URL(), "claude-x")
	resp, err := c.Complete(context.Background(), tgt, request(false))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 1 || resp.Content[0].Text != "Hello from claude-x" || resp.Usage.InputTokens != 6 ||
		resp.Usage.OutputTokens != 3 || resp.FinishReason != llm.FinishStop {
		t.Fatalf("response %+v", resp)
	}
	s, err := c.Stream(context.Background(), tgt, request(true))
	if err != nil {
		t.Fatal(err)
	}
	got, end, err := drain(s)
	s.Close()
	if err != io.EOF || got != "Hello from claude-x" || end.Usage == nil || end.Usage.InputTokens != 6 || end.Usage.OutputTokens != 3 {
		t.Fatalf("stream %q %+v %v", got, end, err)
	}
	for i, r := range m.Requests() {
		if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != "sk-ant" || r.Header.Get("Anthropic-Version") != "2023-06-01" ||
			r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "" {
			t.Fatalf("request %d: %s %v", i, r.Path, r.Header)
		}
		body := r.JSON()
		if body["model"] != "claude-x" || body["max_tokens"] != 100.0 || (body["stream"] == true) != (i == 1) {
			t.Fatalf("body %s", r.Body)
		}
		if i == 1 && r.Header.Get("Accept") != "text/event-stream" {
			t.Fatalf("accept %q", r.Header.Get("Accept"))
		}
	}
}

func TestToolUse(t *testing.T) {
	m, c := setup(t, provider.HTTPOptions{})
	tgt := target(m.URL(), "claude+tools")
	resp, err := c.Complete(context.Background(), tgt, request(false))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 2 || resp.Content[0].ToolName != "get_weather" || !json.Valid(resp.Content[0].ToolInput) ||
		resp.FinishReason != llm.FinishToolUse {
		t.Fatalf("response %+v", resp)
	}
	s, err := c.Stream(context.Background(), tgt, request(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	args := map[int]string{}
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == llm.EventDelta {
			args[ev.Index] += ev.PartialJSON
		}
	}
	if args[0] != `{"location":"Paris, France","unit":"celsius"}` || args[1] != `{"timezone":"Europe/Paris"}` {
		t.Fatalf("args %v", args)
	}
}

func TestUpstreamErrors(t *testing.T) {
	cases := []struct {
		model      string
		status     int
		typ        string
		retryAfter time.Duration
	}{
		{"fail-529", 529, "overloaded_error", time.Second},
		{"fail-429", 429, "rate_limit_error", time.Second},
		{"fail-401", 401, "authentication_error", 0},
		{"fail-400", 400, "invalid_request_error", 0},
		{"fail-500", 500, "api_error", 0},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			m, c := setup(t, provider.HTTPOptions{})
			_, errC := c.Complete(context.Background(), target(m.URL(), tc.model), request(false))
			s, errS := c.Stream(context.Background(), target(m.URL(), tc.model), request(true))
			if s != nil {
				s.Close()
				t.Fatal("Stream must fail before the first event")
			}
			for _, err := range []error{errC, errS} {
				var ue *provider.UpstreamError
				if !errors.As(err, &ue) || ue.Status != tc.status || ue.Type != tc.typ || ue.Message == "" || ue.RetryAfter != tc.retryAfter {
					t.Fatalf("err %v (%+v)", err, ue)
				}
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	m, c := setup(t, provider.HTTPOptions{StreamIdleTimeout: 80 * time.Millisecond})
	cases := []struct {
		model string
		check func(error) bool
	}{
		{"c+break-stream", func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"c+error-event", func(err error) bool {
			var ue *provider.UpstreamError
			return errors.As(err, &ue) && ue.Type == "overloaded_error" && ue.Retryable()
		}},
		{"c+malformed", func(err error) bool { var me *provider.MalformedError; return errors.As(err, &me) }},
		{"c+gap-2000", func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			s, err := c.Stream(context.Background(), target(m.URL(), tc.model), request(true))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, _, err := drain(s); !tc.check(err) {
				t.Fatalf("%T %v", err, err)
			}
		})
	}
	var me *provider.MalformedError
	if _, err := c.Complete(context.Background(), target(m.URL(), "malformed"), request(false)); !errors.As(err, &me) {
		t.Fatalf("malformed complete: %v", err)
	}
}

func TestContextCancel(t *testing.T) {
	m, c := setup(t, provider.HTTPOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Complete(ctx, target(m.URL(), "hang"), request(false)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
}

func TestScriptedUpstream(t *testing.T) {
	var bad string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "k" || r.Header.Get("anthropic-version") != anthropic.Version {
			bad = r.URL.Path
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":2}}`)
	}))
	defer ts.Close()
	c := anthropic.New(http.DefaultClient)
	resp, err := c.Complete(context.Background(), provider.Target{BaseURL: ts.URL + "/", APIKey: "k", Model: "m"}, request(false))
	if err != nil || bad != "" {
		t.Fatalf("err %v bad %q", err, bad)
	}
	var sb strings.Builder
	for _, b := range resp.Content {
		sb.WriteString(b.Text)
	}
	if sb.String() != "ab" {
		t.Fatalf("every text block counts: %q", sb.String())
	}
}
