package mockupstream

import (
	"net/http"
	"strconv"
	"time"
)

// The two scripted tool calls. Arguments are JSON strings streamed in
// fragments of argFragment bytes, as OpenAI and Anthropic both do.
var mockTools = [2]struct{ name, args string }{
	{"get_weather", `{"location":"Paris, France","unit":"celsius"}`},
	{"get_time", `{"timezone":"Europe/Paris"}`},
}

const argFragment = 8

// openai answers an OpenAI or Azure chat-completions request.
func (c *call) openai(rep reply) {
	if c.b.Stream {
		c.openaiStream(rep)
		return
	}
	bp := getBuf()
	defer putBuf(bp)
	b := *bp
	b = append(b, `{"id":"chatcmpl-mock-`...)
	b = strconv.AppendUint(b, c.id, 10)
	b = append(b, `","object":"chat.completion","created":`...)
	b = appendInt(b, time.Now().Unix())
	b = append(b, `,"model":`...)
	b = appendString(b, c.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if rep.tools {
		b = append(b, `null,"tool_calls":[`...)
		for i, t := range mockTools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":"call_mock_`...)
			b = strconv.AppendInt(b, int64(i+1), 10)
			b = append(b, `","type":"function","function":{"name":`...)
			b = appendString(b, t.name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, t.args)
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	} else {
		b = appendWords(b, rep.words)
	}
	b = append(b, `,"refusal":null},"logprobs":null,"finish_reason":`...)
	b = appendString(b, rep.openaiFinish())
	b = append(b, `}],"usage":`...)
	b = c.appendOpenAIUsage(b, rep)
	b = append(b, `,"system_fingerprint":"fp_mock"}`...)

	switch c.p.Fault {
	case FaultMalformed:
		b = b[:len(b)/2] // truncated JSON: a 200 the client cannot read
	case FaultBreakStream:
		c.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write(b[:len(b)/2])
		flush(c.w)
		panic(http.ErrAbortHandler) // close short of Content-Length
	case FaultErrorEvent:
		writeError(c.w, c.f, http.StatusServiceUnavailable, statusMessage(http.StatusServiceUnavailable), "")
		return
	}
	*bp = b
	c.w.Header()["X-Request-Id"] = []string{"req_mock_" + strconv.FormatUint(c.id, 10)}
	writeJSON(c.w, http.StatusOK, b)
}

func (r reply) openaiFinish() string {
	switch {
	case r.tools:
		return "tool_calls"
	case r.length:
		return "length"
	}
	return "stop"
}

func (c *call) appendOpenAIUsage(b []byte, rep reply) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, int64(c.inTok))
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, int64(rep.outTok))
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, int64(c.inTok+rep.outTok))
	return append(b, `,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`...)
}

// appendWords appends the words joined by single spaces as one JSON string.
func appendWords(b []byte, words []string) []byte {
	b = append(b, '"')
	for i, w := range words {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendEscaped(b, w)
	}
	return append(b, '"')
}

// sseWriter batches frames into one buffer and writes them at flush points:
// after the first frame (time to first byte matters), after every frame when
// chunks are spaced out, and at the end.
type sseWriter struct {
	w    http.ResponseWriter
	b    []byte
	head []byte // the constant start of every OpenAI chunk
}

func (s *sseWriter) flush() {
	if len(s.b) > 0 {
		_, _ = s.w.Write(s.b)
		s.b = s.b[:0]
	}
	flush(s.w)
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *call) startSSE() {
	h := c.w.Header()
	h["Content-Type"] = ctSSE
	h["Cache-Control"] = noCach
	c.w.WriteHeader(http.StatusOK)
}

// openaiStream writes chat.completion.chunk frames: role first, one chunk per
// word (or tool-call fragment), a finish chunk, the usage chunk with
// `choices: []` when stream_options.include_usage, then [DONE]. Every chunk
// has the same id and created.
func (c *call) openaiStream(rep reply) {
	c.startSSE()
	bp := getBuf()
	defer putBuf(bp)
	usage := c.b.includeUsage()

	head := make([]byte, 0, 192)
	head = append(head, `data: {"id":"chatcmpl-mock-`...)
	head = strconv.AppendUint(head, c.id, 10)
	head = append(head, `","object":"chat.completion.chunk","created":`...)
	head = appendInt(head, time.Now().Unix())
	head = append(head, `,"model":`...)
	head = appendString(head, c.model)
	head = append(head, `,"system_fingerprint":"fp_mock","choices":`...)
	sw := &sseWriter{w: c.w, b: *bp, head: head}
	defer func() { *bp = sw.b }()

	// chunk appends one frame with the given delta JSON and finish reason.
	chunk := func(delta []byte, finish string) {
		sw.b = append(sw.b, sw.head...)
		sw.b = append(sw.b, `[{"index":0,"delta":`...)
		sw.b = append(sw.b, delta...)
		sw.b = append(sw.b, `,"logprobs":null,"finish_reason":`...)
		sw.b = appendNullable(sw.b, finish)
		sw.b = append(sw.b, `}]`...)
		if usage {
			sw.b = append(sw.b, `,"usage":null`...)
		}
		sw.b = append(sw.b, "}\n\n"...)
	}
	var d []byte
	pace := func() bool {
		if c.p.ChunkDelay > 0 {
			sw.flush()
			return c.sleep(c.p.ChunkDelay)
		}
		return true
	}

	if c.p.Fault == FaultMalformed {
		sw.b = append(sw.b, "data: {\"id\":\"chatcmpl-mock\",\"choices\":[{\"delta\":{\"content\": oops}\n\n"...)
		sw.flush()
		return
	}

	if rep.tools {
		d = append(d[:0], `{"role":"assistant","content":null,"refusal":null}`...)
	} else {
		d = append(d[:0], `{"role":"assistant","content":"","refusal":null}`...)
	}
	chunk(d, "")
	sw.flush()

	sent := 0 // content chunks sent, for break-stream / error-event
	cut := func() bool {
		sent++
		if sent == 2 && (c.p.Fault == FaultBreakStream || c.p.Fault == FaultErrorEvent) {
			if c.p.Fault == FaultErrorEvent {
				sw.b = append(sw.b, "data: "...)
				sw.b = appendOpenAIError(sw.b, http.StatusInternalServerError, "The server had an error while processing your request.", "")
				sw.b = append(sw.b, "\n\n"...)
				sw.flush()
				return true
			}
			sw.flush()
			panic(http.ErrAbortHandler) // drop the connection: no finish, no [DONE]
		}
		return false
	}

	if rep.tools {
		for i, t := range mockTools {
			d = append(d[:0], `{"tool_calls":[{"index":`...)
			d = strconv.AppendInt(d, int64(i), 10)
			d = append(d, `,"id":"call_mock_`...)
			d = strconv.AppendInt(d, int64(i+1), 10)
			d = append(d, `","type":"function","function":{"name":`...)
			d = appendString(d, t.name)
			d = append(d, `,"arguments":""}}]}`...)
			chunk(d, "")
			for off := 0; off < len(t.args); off += argFragment {
				if !pace() || cut() {
					return
				}
				frag := t.args[off:min(off+argFragment, len(t.args))]
				d = append(d[:0], `{"tool_calls":[{"index":`...)
				d = strconv.AppendInt(d, int64(i), 10)
				d = append(d, `,"function":{"arguments":`...)
				d = appendString(d, frag)
				d = append(d, `}}]}`...)
				chunk(d, "")
			}
		}
	} else {
		for i, w := range rep.words {
			if !pace() || cut() {
				return
			}
			d = append(d[:0], `{"content":"`...)
			if i > 0 {
				d = append(d, ' ')
			}
			d = appendEscaped(d, w)
			d = append(d, `"}`...)
			chunk(d, "")
		}
	}
	if sent < 2 && (c.p.Fault == FaultBreakStream || c.p.Fault == FaultErrorEvent) {
		sent = 1 // a reply shorter than two chunks still breaks before the end
		if cut() {
			return
		}
	}
	if !pace() {
		return
	}
	chunk([]byte(`{}`), rep.openaiFinish())
	if usage {
		sw.b = append(sw.b, sw.head...)
		sw.b = append(sw.b, `[],"usage":`...)
		sw.b = c.appendOpenAIUsage(sw.b, rep)
		sw.b = append(sw.b, "}\n\n"...)
	}
	sw.b = append(sw.b, "data: [DONE]\n\n"...)
	sw.flush()
}
