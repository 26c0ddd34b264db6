package mockupstream

import (
	"strconv"
	"strings"
	"time"
)

// Fault is a way for the mock to misbehave instead of answering normally.
// Its string is also the directive that selects it per request.
type Fault string

const (
	FaultNone Fault = ""
	// FaultMalformed answers 200 with a body that is not the vendor format
	// (non-stream: broken JSON; stream: an SSE frame whose data is not JSON).
	FaultMalformed Fault = "malformed"
	// FaultBreakStream sends part of the reply, then drops the connection
	// without the stream terminator (or, non-streaming, short of Content-Length).
	FaultBreakStream Fault = "break-stream"
	// FaultHang accepts the request and never answers until the client goes
	// away or the mock closes.
	FaultHang Fault = "hang"
	// FaultReset hijacks the connection and resets it (RST) before any answer.
	FaultReset Fault = "reset"
	// FaultErrorEvent answers 200, streams a few deltas, then an in-stream
	// error (Anthropic `event: error` overloaded_error; OpenAI a `data:` chunk
	// carrying an error object). Non-streaming requests get a 529/503 instead.
	FaultErrorEvent Fault = "error-event"
)

// HeaderDirectives is the request header that selects behaviour per request,
// with the same directives as the model name (separated by ',' or '+'). It
// wins over the model name, which wins over the global Mode.
const HeaderDirectives = "X-Mock-Directives"

// ToolCallOutputTokens is what each tool call counts as output tokens, so a
// "tools" reply (two calls, no text) reports 2*ToolCallOutputTokens.
const ToolCallOutputTokens = 10

// Mode is the global behaviour, set with Server.SetMode. The zero Mode
// answers every request normally with "Hello from <model>".
//
// Every field has a per-request directive (model name segment after '+', or
// the X-Mock-Directives header), listed next to it.
type Mode struct {
	// FailStatus answers with this HTTP status and a vendor-shaped error body
	// ("fail-500", "fail-429", "fail-401", "fail-400", any 3-digit status).
	FailStatus int
	// FailTimes, with FailStatus, fails only the first N requests and then
	// succeeds ("flaky-N", counted per model name; status from fail-DDD,
	// else 500). 0 means every request fails.
	FailTimes int
	// RetryAfter is the retry-after header sent with 429 and 529; default "1".
	RetryAfter string
	// Latency delays the response headers ("slow-<ms>").
	Latency time.Duration
	// Fault picks a misbehaviour ("malformed", "break-stream", "hang",
	// "reset", "error-event").
	Fault Fault
	// Tools replies with two tool calls (get_weather, get_time) instead of
	// text ("tools").
	Tools bool
	// Echo replies with the last user message instead of "Hello from
	// <model>" ("echo").
	Echo bool
	// Reply replaces the reply text (no directive).
	Reply string
	// Chunks makes the reply exactly this many words (the base reply's words
	// repeated), streamed one word per chunk ("chunks-N"). 0: the base reply,
	// one word per chunk.
	Chunks int
	// ChunkDelay sleeps between streamed chunks ("gap-<ms>").
	ChunkDelay time.Duration
	// APIKey, when set, is the only accepted credential; when empty any
	// non-empty credential is accepted (no directive).
	APIKey string
}

// plan is what one request will get: the global Mode overridden by the
// model's directives and then by the header's.
type plan struct {
	Mode
	flaky bool // FailTimes came from a per-request directive: count per model
}

// applyDirectives overrides p with every directive found in s. Segments that
// are not directives (the model's real name) are ignored, so "gpt-4o+fail-500"
// and "fail-500" both work.
func (p *plan) applyDirectives(s string, seps string) {
	for s != "" {
		i := strings.IndexAny(s, seps)
		var seg string
		if i < 0 {
			seg, s = s, ""
		} else {
			seg, s = s[:i], s[i+1:]
		}
		p.apply(strings.TrimSpace(seg))
	}
}

func (p *plan) apply(seg string) {
	switch Fault(seg) {
	case FaultMalformed, FaultBreakStream, FaultHang, FaultReset, FaultErrorEvent:
		p.Fault = Fault(seg)
		return
	}
	switch seg {
	case "tools":
		p.Tools = true
		return
	case "echo":
		p.Echo = true
		return
	case "ok":
		// "ok" clears a global failure for one request.
		p.FailStatus, p.Fault = 0, FaultNone
		return
	}
	name, arg, ok := strings.Cut(seg, "-")
	if !ok {
		return
	}
	n, err := strconv.Atoi(arg)
	if err != nil || n < 0 {
		return
	}
	switch name {
	case "fail":
		if n >= 100 && n <= 599 {
			p.FailStatus = n
		}
	case "flaky":
		p.FailTimes, p.flaky = n, true
		if p.FailStatus == 0 {
			p.FailStatus = 500
		}
	case "slow":
		p.Latency = time.Duration(n) * time.Millisecond
	case "chunks":
		p.Chunks = n
	case "gap":
		p.ChunkDelay = time.Duration(n) * time.Millisecond
	}
}
