package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/provider/openai"
)

// request has 2 system words and 4 user words: the mock counts 6 input tokens.
func request(stream bool) *llm.Request {
	return &llm.Request{
		Model:    "alias",
		System:   "be brief",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "say hello to me"}}}},
		Stream:   stream,
		Format:   llm.FormatChat,
	}
}

type kind struct {
	name   string
	client func(hc *http.Client) provider.Client
	target func(base, model string) provider.Target
}

var kinds = []kind{
	{"openai", func(hc *http.Client) provider.Client { return openai.New(hc) },
		func(base, model string) provider.Target {
			return provider.Target{Type: provider.TypeOpenAI, BaseURL: base + "/v1", APIKey: "sk-test", Model: model}
		}},
	{"azure", func(hc *http.Client) provider.Client { return openai.NewAzure(hc) },
		func(base, model string) provider.Target {
			return provider.Target{Type: provider.TypeAzure, BaseURL: base, APIKey: "az-test", APIVersion: "2024-10-21", Model: model}
		}},
}

// setup starts a mock and a client whose idle connections and the mock are
// cleaned up before goleak checks for leaked goroutines.
func setup(t *testing.T, k kind, o provider.HTTPOptions) (*mockupstream.Server, provider.Client) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	m := mockupstream.New()
	hc := provider.NewHTTPClient(o)
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		m.Close()
		goleak.VerifyNone(t, ignore)
	})
	return m, k.client(hc)
}

func text(r *llm.Response) string {
	var sb strings.Builder
	for _, b := range r.Content {
		sb.WriteString(b.Text)
	}
	return sb.String()
}

// drain reads a stream to its end and returns the text, the end event and the error.
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
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			m, c := setup(t, k, provider.HTTPOptions{})
			tgt := k.target(m.URL(), "gpt-4o")

			resp, err := c.Complete(context.Background(), tgt, request(false))
			if err != nil {
				t.Fatal(err)
			}
			if text(resp) != "Hello from gpt-4o" || resp.Usage.InputTokens != 6 || resp.Usage.OutputTokens != 3 || resp.FinishReason != llm.FinishStop {
				t.Fatalf("response %+v", resp)
			}

			s, err := c.Stream(context.Background(), tgt, request(true))
			if err != nil {
				t.Fatal(err)
			}
			got, end, err := drain(s)
			s.Close()
			if err != io.EOF {
				t.Fatalf("stream ended with %v", err)
			}
			if got != "Hello from gpt-4o" || end.Usage == nil || end.Usage.InputTokens != 6 || end.Usage.OutputTokens != 3 {
				t.Fatalf("stream text %q end %+v", got, end)
			}

			reqs := m.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				switch k.name {
				case "openai":
					if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
						t.Fatalf("openai request %s %v", r.Path, r.Header)
					}
				case "azure":
					if r.Path != "/openai/deployments/gpt-4o/chat/completions" || r.Query != "api-version=2024-10-21" ||
						r.Header.Get("Api-Key") != "az-test" || r.Header.Get("Authorization") != "" {
						t.Fatalf("azure request %s?%s %v", r.Path, r.Query, r.Header)
					}
				}
				if r.Header.Get("Content-Type") != "application/json" {
					t.Fatalf("content-type %q", r.Header.Get("Content-Type"))
				}
				body := r.JSON()
				stream := i == 1
				if body["model"] != "gpt-4o" || (body["stream"] == true) != stream {
					t.Fatalf("body %s", r.Body)
				}
				if stream {
					if r.Header.Get("Accept") != "text/event-stream" {
						t.Fatalf("accept %q", r.Header.Get("Accept"))
					}
					so, _ := body["stream_options"].(map[string]any)
					if so["include_usage"] != true {
						t.Fatalf("stream_options %v: the gateway must always ask for usage", body["stream_options"])
					}
				}
			}
		})
	}
}

func TestToolCalls(t *testing.T) {
	m, c := setup(t, kinds[0], provider.HTTPOptions{})
	tgt := kinds[0].target(m.URL(), "gpt-4o+tools")
	resp, err := c.Complete(context.Background(), tgt, request(false))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range resp.Content {
		if b.Type == llm.BlockToolUse {
			names = append(names, b.ToolName)
			if !json.Valid(b.ToolInput) {
				t.Fatalf("tool input %q", b.ToolInput)
			}
		}
	}
	if strings.Join(names, ",") != "get_weather,get_time" || resp.FinishReason != llm.FinishToolUse {
		t.Fatalf("tools %v finish %q", names, resp.FinishReason)
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
		t.Fatalf("streamed args %v", args)
	}
}

func TestUpstreamErrors(t *testing.T) {
	cases := []struct {
		model      string
		status     int
		typ        string
		retryAfter time.Duration
	}{
		{"fail-500", 500, "server_error", 0},
		{"fail-429", 429, "requests", time.Second},
		{"fail-401", 401, "invalid_request_error", 0},
		{"fail-400", 400, "invalid_request_error", 0},
		{"fail-503", 503, "server_error", 0},
	}
	for _, k := range kinds {
		for _, tc := range cases {
			t.Run(k.name+"/"+tc.model, func(t *testing.T) {
				m, c := setup(t, k, provider.HTTPOptions{})
				tgt := k.target(m.URL(), tc.model)
				_, errC := c.Complete(context.Background(), tgt, request(false))
				s, errS := c.Stream(context.Background(), tgt, request(true))
				if s != nil {
					s.Close()
					t.Fatal("Stream must fail before the first event")
				}
				for _, err := range []error{errC, errS} {
					var ue *provider.UpstreamError
					if !errors.As(err, &ue) {
						t.Fatalf("err %T %v", err, err)
					}
					if ue.Status != tc.status || ue.Type != tc.typ || ue.Message == "" || ue.RetryAfter != tc.retryAfter {
						t.Fatalf("got %+v", ue)
					}
				}
			})
		}
	}
}

func TestAzureAuthFailure(t *testing.T) {
	m, c := setup(t, kinds[1], provider.HTTPOptions{})
	m.SetMode(mockupstream.Mode{APIKey: "the-right-one"})
	_, err := c.Complete(context.Background(), kinds[1].target(m.URL(), "d"), request(false))
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.Status != 401 || ue.Type != "401" || !strings.Contains(ue.Message, "Access denied") {
		t.Fatalf("err %v", err)
	}
}

func TestMalformed(t *testing.T) {
	m, c := setup(t, kinds[0], provider.HTTPOptions{})
	tgt := kinds[0].target(m.URL(), "malformed")
	var me *provider.MalformedError
	if _, err := c.Complete(context.Background(), tgt, request(false)); !errors.As(err, &me) {
		t.Fatalf("complete: %T %v", err, err)
	}
	s, err := c.Stream(context.Background(), tgt, request(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := drain(s); !errors.As(err, &me) {
		t.Fatalf("stream: %T %v", err, err)
	}
}

func TestBrokenStreamAndErrorEvent(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			m, c := setup(t, k, provider.HTTPOptions{})
			s, err := c.Stream(context.Background(), k.target(m.URL(), "m+break-stream"), request(true))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := drain(s)
			s.Close()
			if !errors.Is(err, io.ErrUnexpectedEOF) || got == "" {
				t.Fatalf("break-stream: text %q err %v", got, err)
			}
			// Sticky: asking again gives the same failure, never io.EOF.
			if _, err2 := s.Next(); err2 == io.EOF || err2 == nil {
				t.Fatalf("after failure Next = %v", err2)
			}

			s, err = c.Stream(context.Background(), k.target(m.URL(), "m+error-event"), request(true))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = drain(s)
			s.Close()
			var ue *provider.UpstreamError
			if !errors.As(err, &ue) || ue.Status != 0 {
				t.Fatalf("error-event: %T %v", err, err)
			}
			// A non-streaming call cut short of Content-Length is a transport error.
			_, err = c.Complete(context.Background(), k.target(m.URL(), "m+break-stream"), request(false))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("cut reply: %T %v", err, err)
			}
		})
	}
}

func TestStreamIdleTimeout(t *testing.T) {
	m, c := setup(t, kinds[0], provider.HTTPOptions{StreamIdleTimeout: 80 * time.Millisecond})
	s, err := c.Stream(context.Background(), kinds[0].target(m.URL(), "m+gap-2000"), request(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	_, _, err = drain(s)
	var ie *provider.IdleTimeoutError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ie) {
		t.Fatalf("err %T %v", err, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("idle timeout fired after %v", d)
	}
	// A stream with gaps shorter than the idle timeout is not cut.
	s2, err := c.Stream(context.Background(), kinds[0].target(m.URL(), "m+gap-20"), request(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, _, err := drain(s2); err != io.EOF || got != "Hello from m+gap-20" {
		t.Fatalf("slow stream: %q %v", got, err)
	}
}

func TestFirstByteTimeout(t *testing.T) {
	m, c := setup(t, kinds[0], provider.HTTPOptions{FirstByteTimeout: 50 * time.Millisecond})
	_, err := c.Complete(context.Background(), kinds[0].target(m.URL(), "slow-1000"), request(false))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err %T %v", err, err)
	}
}

func TestContextCancelStopsInFlightCall(t *testing.T) {
	m, c := setup(t, kinds[0], provider.HTTPOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Complete(ctx, kinds[0].target(m.URL(), "hang"), request(false))
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err = c.Stream(ctx, kinds[0].target(m.URL(), "hang"), request(true))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	// Mid-stream: the caller's deadline ends a stream that is waiting for a chunk.
	ctx, cancel3 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel3()
	s, err := c.Stream(ctx, kinds[0].target(m.URL(), "m+gap-2000"), request(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := drain(s); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("mid-stream deadline: %v", err)
	}
}

func TestCloseMidStreamReleasesEverything(t *testing.T) {
	m, c := setup(t, kinds[0], provider.HTTPOptions{})
	s, err := c.Stream(context.Background(), kinds[0].target(m.URL(), "m+gap-5000"), request(true))
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := s.Next(); err != nil || ev.Type != llm.EventStart {
		t.Fatalf("first event %+v %v", ev, err)
	}
	done := make(chan struct{})
	go func() {
		_, err := s.Next() // blocked waiting for the next chunk
		if err == nil || err == io.EOF {
			t.Errorf("Next after Close = %v", err)
		}
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	s.Close() // Close is cancellation: it must unblock Next
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock Next")
	}
	if time.Since(start) > time.Second {
		t.Fatal("Close was slow")
	}
	// goleak in setup's cleanup proves the connection goroutines are gone.
}

func TestTransportErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := openai.New(provider.NewHTTPClient(provider.HTTPOptions{}))
	_, err = c.Complete(context.Background(), provider.Target{BaseURL: "http://" + addr + "/v1", APIKey: "k", Model: "m"}, request(false))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("refused: %v", err)
	}

	m, c2 := setup(t, kinds[0], provider.HTTPOptions{})
	_, err = c2.Complete(context.Background(), kinds[0].target(m.URL(), "reset"), request(false))
	var ue *provider.UpstreamError
	if err == nil || errors.As(err, &ue) {
		t.Fatalf("reset: %v", err)
	}
}

// scripted is a tiny upstream that checks the exact request and counts new
// connections, independent of the mock.
func TestScriptedUpstream(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	var conns atomic.Int32
	var failures atomic.Value
	fail := func(format string) { failures.Store(format) }
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions":
			fail("path " + r.Method + " " + r.URL.Path)
		case r.Header.Get("Authorization") != "Bearer sk-x" || r.Header.Get("Content-Type") != "application/json":
			fail("headers")
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["model"] != "upstream-model" {
			fail("body")
		}
		if body["stream"] == true {
			if r.Header.Get("Accept") != "text/event-stream" {
				fail("accept")
			}
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"upstream-model","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"upstream-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"upstream-model","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`+"\n\n")
			io.WriteString(w, "data: [DONE]\n\n")
			// The chunked terminator comes in a later segment: the client
			// must still read it on Close to keep the connection.
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c2","object":"chat.completion","created":1,"model":"upstream-model","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	hc := provider.NewHTTPClient(provider.HTTPOptions{})
	defer func() {
		hc.CloseIdleConnections()
		ts.Close()
		goleak.VerifyNone(t, ignore)
	}()
	c := openai.New(hc)
	// A trailing slash on api_base must not produce "//chat/completions".
	tgt := provider.Target{BaseURL: ts.URL + "/v1/", APIKey: "sk-x", Model: "upstream-model"}
	for range 3 {
		s, err := c.Stream(context.Background(), tgt, request(true))
		if err != nil {
			t.Fatal(err)
		}
		if got, end, err := drain(s); err != io.EOF || got != "hi" || end.Usage == nil || end.Usage.OutputTokens != 1 {
			t.Fatalf("stream %q %+v %v", got, end, err)
		}
		s.Close()
		if _, err := c.Complete(context.Background(), tgt, request(false)); err != nil {
			t.Fatal(err)
		}
	}
	if f := failures.Load(); f != nil {
		t.Fatalf("upstream saw a wrong request: %v", f)
	}
	// Closing a finished stream must hand the connection back to the pool.
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 6 sequential calls; streams are not releasing theirs", n)
	}
}

func TestStreamRejectsNonEventStream(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"error":{"message":"streaming is not supported","type":"invalid_request_error"}}`)
	}))
	defer ts.Close()
	c := openai.New(provider.NewHTTPClient(provider.HTTPOptions{}))
	s, err := c.Stream(context.Background(), provider.Target{BaseURL: ts.URL, APIKey: "k", Model: "m"}, request(true))
	var me *provider.MalformedError
	if s != nil || !errors.As(err, &me) || !strings.Contains(err.Error(), "streaming is not supported") {
		t.Fatalf("stream %v err %v", s, err)
	}
}

func BenchmarkComplete(b *testing.B) {
	m := mockupstream.New()
	defer m.Close()
	m.SetRecording(false)
	c := openai.New(provider.NewHTTPClient(provider.HTTPOptions{}))
	tgt := kinds[0].target(m.URL(), "gpt-4o")
	req := request(false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(context.Background(), tgt, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStream(b *testing.B) {
	m := mockupstream.New()
	defer m.Close()
	m.SetRecording(false)
	c := openai.New(provider.NewHTTPClient(provider.HTTPOptions{StreamIdleTimeout: time.Minute}))
	tgt := kinds[0].target(m.URL(), "gpt-4o+chunks-20")
	req := request(true)
	b.ReportAllocs()
	for b.Loop() {
		s, err := c.Stream(context.Background(), tgt, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := drain(s); err != io.EOF {
			b.Fatal(err)
		}
		s.Close()
	}
}
