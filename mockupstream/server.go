// Package mockupstream is a scripted fake LLM upstream speaking the OpenAI,
// Azure OpenAI and Anthropic wire formats on one http.Handler. Tests use it
// to drive provider clients and the whole gateway through every success and
// failure path; the cmd/mockupstream binary serves it for manual runs and as
// the benchmark upstream, which is why the hot path appends bytes instead of
// marshalling.
//
// Routes:
//
//	POST /v1/chat/completions, /chat/completions           OpenAI, Authorization: Bearer <key>
//	POST /openai/deployments/{d}/chat/completions?api-version=...  Azure, api-key: <key>
//	POST /v1/messages                                       Anthropic, x-api-key + anthropic-version
//
// Replies are deterministic: the text is "Hello from <model>" (or the last
// user message with "echo"), input_tokens is the number of whitespace-
// separated words in the system prompt and every message text, output_tokens
// the number of words in the reply (ToolCallOutputTokens per tool call).
//
// Behaviour is chosen globally with SetMode and per request by directives in
// the model name after '+' ("gpt-4o+fail-429", or the bare "fail-429") or in
// the X-Mock-Directives header; see Mode for the list. The header wins over
// the model, which wins over the global Mode.
package mockupstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is the mock upstream: an http.Handler plus, when made by New, the
// httptest server in front of it. All methods are safe for concurrent use.
type Server struct {
	ts *httptest.Server

	mode   atomic.Pointer[Mode]
	fails  atomic.Int64 // requests failed under a global Mode.FailTimes
	seq    atomic.Uint64
	record atomic.Bool

	mu     sync.Mutex
	reqs   []Request
	counts map[string]int
	flaky  map[string]int // requests seen per model under a "flaky-N" directive

	done      chan struct{} // closed by Close: releases hanging handlers
	closeOnce sync.Once
}

// New starts the mock on a loopback httptest server, recording requests.
func New() *Server {
	s := NewUnstarted()
	s.ts = httptest.NewServer(s)
	return s
}

// NewUnstarted makes the mock without a listener, for mounting Handler in
// your own server (the binary does). Recording is on; turn it off with
// SetRecording(false) for long benchmark runs.
func NewUnstarted() *Server {
	s := &Server{counts: map[string]int{}, flaky: map[string]int{}, done: make(chan struct{})}
	s.mode.Store(&Mode{})
	s.record.Store(true)
	return s
}

// Handler is the mock as an http.Handler.
func (s *Server) Handler() http.Handler { return s }

// URL is the base URL of the started server ("" when unstarted). It serves as
// api_base for every provider type: openai (with or without /v1), azure and
// anthropic.
func (s *Server) URL() string {
	if s.ts == nil {
		return ""
	}
	return s.ts.URL
}

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		if s.ts != nil {
			s.ts.CloseClientConnections()
			s.ts.Close()
		}
	})
}

// SetMode replaces the global behaviour and restarts its FailTimes count.
func (s *Server) SetMode(m Mode) {
	s.fails.Store(0)
	s.mode.Store(&m)
}

// Mode returns the global behaviour.
func (s *Server) Mode() Mode { return *s.mode.Load() }

// SetRecording switches request recording (Requests); counts stay on.
func (s *Server) SetRecording(on bool) { s.record.Store(on) }

// Requests returns a copy of every request received since the last Reset.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// LastRequest returns the most recent request.
func (s *Server) LastRequest() (Request, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return Request{}, false
	}
	return s.reqs[len(s.reqs)-1], true
}

// Count is how many requests named model (as sent, directives included;
// Azure: the deployment) since the last Reset.
func (s *Server) Count(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[model]
}

// Total is how many requests since the last Reset.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.counts {
		n += c
	}
	return n
}

// Reset forgets recorded requests, counts and every "fail N times" counter.
// The global Mode stays.
func (s *Server) Reset() {
	s.mu.Lock()
	s.reqs = nil
	s.counts = map[string]int{}
	s.flaky = map[string]int{}
	s.mu.Unlock()
	s.fails.Store(0)
}

// format is the wire protocol a route speaks.
type format uint8

const (
	fmtOpenAI format = iota + 1
	fmtAzure
	fmtAnthropic
)

func (f format) String() string {
	switch f {
	case fmtOpenAI:
		return "openai"
	case fmtAzure:
		return "azure"
	case fmtAnthropic:
		return "anthropic"
	}
	return ""
}

// route maps a path to its format (and Azure deployment) without a mux:
// three fixed shapes are cheaper to match by hand on the hot path.
func route(path string) (format, string) {
	switch path {
	case "/v1/chat/completions", "/chat/completions":
		return fmtOpenAI, ""
	case "/v1/messages":
		return fmtAnthropic, ""
	}
	if rest, ok := strings.CutPrefix(path, "/openai/deployments/"); ok {
		if dep, ok := strings.CutSuffix(rest, "/chat/completions"); ok && dep != "" && !strings.Contains(dep, "/") {
			return fmtAzure, dep
		}
	}
	return 0, ""
}

// call is one request being answered.
type call struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	f      format
	b      body
	model  string
	p      plan
	id     uint64
	inTok  int
	maxTok int
}

// ServeHTTP answers one request. The order of checks follows the vendors:
// route, method, credentials, version headers, body, then scripted behaviour.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, deployment := route(r.URL.Path)
	if f == 0 {
		writeError(w, fmtOpenAI, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path+".", "")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, f, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed; use POST.", "")
		return
	}

	bp := getBuf()
	defer putBuf(bp)
	buf := bytes.NewBuffer(*bp)
	_, rerr := buf.ReadFrom(io.LimitReader(r.Body, 32<<20))
	*bp = buf.Bytes()
	raw := *bp

	c := &call{s: s, w: w, r: r, f: f, id: s.seq.Add(1)}
	perr := json.Unmarshal(raw, &c.b)
	c.model = c.b.Model
	if f == fmtAzure {
		c.model = deployment // the path's deployment wins over the body's model
	}
	s.note(r, f, c.model, raw)

	mode := s.mode.Load()
	if rerr != nil {
		writeError(w, f, http.StatusBadRequest, "Could not read the request body.", "")
		return
	}
	if !c.authorized(mode.APIKey) {
		writeAuthError(w, f)
		return
	}
	switch f {
	case fmtAzure:
		if r.URL.Query().Get("api-version") == "" {
			writeAzureError(w, http.StatusBadRequest, "MissingApiVersionParameter",
				"The api-version query parameter (?api-version=) is required for all requests.")
			return
		}
	case fmtAnthropic:
		if r.Header.Get("anthropic-version") == "" {
			writeError(w, f, http.StatusBadRequest, "anthropic-version: header is required", "")
			return
		}
	}
	if perr != nil {
		writeError(w, f, http.StatusBadRequest, "We could not parse the JSON body of your request.", "")
		return
	}
	if c.model == "" {
		writeError(w, f, http.StatusBadRequest, "model: Field required", "model")
		return
	}
	if f == fmtAnthropic && c.b.MaxTokens == nil {
		writeError(w, f, http.StatusBadRequest, "max_tokens: Field required", "max_tokens")
		return
	}
	if len(c.b.Messages) == 0 {
		writeError(w, f, http.StatusBadRequest, "messages: at least one message is required", "messages")
		return
	}

	c.p.Mode = *mode
	c.p.applyDirectives(c.model, "+")
	if h := r.Header.Get(HeaderDirectives); h != "" {
		c.p.applyDirectives(h, "+, ")
	}
	c.inTok = c.b.inputTokens()
	c.maxTok = c.b.maxTokens()

	if c.p.Latency > 0 && !c.sleep(c.p.Latency) {
		return
	}
	if c.p.FailStatus != 0 && s.shouldFail(&c.p, c.model) {
		if c.p.FailStatus == http.StatusTooManyRequests || c.p.FailStatus == 529 {
			ra := c.p.RetryAfter
			if ra == "" {
				ra = "1"
			}
			w.Header().Set("Retry-After", ra)
		}
		writeError(w, f, c.p.FailStatus, statusMessage(c.p.FailStatus), "")
		return
	}
	switch c.p.Fault {
	case FaultReset:
		resetConn(w)
		return
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	rep := c.reply()
	if f == fmtAnthropic {
		c.anthropic(rep)
	} else {
		c.openai(rep)
	}
}

// note counts the request and, when recording, keeps a copy of it.
func (s *Server) note(r *http.Request, f format, model string, raw []byte) {
	rec := s.record.Load()
	var req Request
	if rec {
		req = Request{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: bytes.Clone(raw), Format: f.String(), Model: model,
		}
	}
	s.mu.Lock()
	s.counts[model]++
	if rec {
		s.reqs = append(s.reqs, req)
	}
	s.mu.Unlock()
}

// shouldFail applies FailTimes: global counts are shared by every request,
// per-request "flaky-N" counts are per model name so parallel tests using
// different models do not disturb each other.
func (s *Server) shouldFail(p *plan, model string) bool {
	if p.FailTimes == 0 {
		return true
	}
	if p.flaky {
		s.mu.Lock()
		n := s.flaky[model]
		s.flaky[model] = n + 1
		s.mu.Unlock()
		return n < p.FailTimes
	}
	return s.fails.Add(1) <= int64(p.FailTimes)
}

func (c *call) authorized(want string) bool {
	var got string
	switch c.f {
	case fmtOpenAI:
		v := c.r.Header.Get("Authorization")
		k, ok := strings.CutPrefix(v, "Bearer ")
		if !ok {
			return false
		}
		got = k
	case fmtAzure:
		got = c.r.Header.Get("api-key")
	case fmtAnthropic:
		got = c.r.Header.Get("x-api-key")
	}
	if got == "" {
		return false
	}
	return want == "" || got == want
}

// sleep waits d unless the client leaves or the mock closes first.
func (c *call) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.r.Context().Done():
		return false
	case <-c.s.done:
		return false
	}
}

// resetConn closes the TCP connection with SO_LINGER 0 so the client sees a
// reset, not a clean EOF. Where hijacking is impossible (HTTP/2) the stream
// is aborted instead.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// reply is the deterministic answer to one request.
type reply struct {
	words  []string // text reply, nil for a tool reply
	tools  bool
	length bool // cut at max_tokens
	outTok int
}

// replyCache keeps the word list of "Hello from <model>" per model: the
// benchmark asks for the same few models millions of times.
var (
	replyCache     sync.Map // string -> []string
	replyCacheSize atomic.Int64
)

func (c *call) reply() reply {
	if c.p.Tools {
		return reply{tools: true, outTok: 2 * ToolCallOutputTokens}
	}
	var words []string
	switch {
	case c.p.Reply != "":
		words = strings.Fields(c.p.Reply)
	case c.p.Echo:
		words = strings.Fields(c.b.lastUserText())
	}
	if len(words) == 0 {
		words = helloWords(c.model)
	}
	if n := c.p.Chunks; n > 0 && n != len(words) {
		out := make([]string, n)
		for i := range out {
			out[i] = words[i%len(words)]
		}
		words = out
	}
	rep := reply{words: words}
	if c.maxTok > 0 && len(words) > c.maxTok {
		rep.words, rep.length = words[:c.maxTok], true
	}
	rep.outTok = len(rep.words)
	return rep
}

func helloWords(model string) []string {
	if v, ok := replyCache.Load(model); ok {
		return v.([]string)
	}
	w := strings.Fields("Hello from " + model)
	if replyCacheSize.Add(1) < 4096 {
		replyCache.Store(model, w)
	}
	return w
}
