package mockupstream

import (
	"net/http"
	"strconv"
)

func (r reply) anthropicStop() string {
	switch {
	case r.tools:
		return "tool_use"
	case r.length:
		return "max_tokens"
	}
	return "end_turn"
}

func (c *call) appendMessageID(b []byte) []byte {
	b = append(b, `"msg_mock_`...)
	b = strconv.AppendUint(b, c.id, 10)
	return append(b, '"')
}

// anthropic answers a messages request.
func (c *call) anthropic(rep reply) {
	if c.b.Stream {
		c.anthropicStream(rep)
		return
	}
	bp := getBuf()
	defer putBuf(bp)
	b := *bp
	b = append(b, `{"id":`...)
	b = c.appendMessageID(b)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, c.model)
	b = append(b, `,"content":[`...)
	if rep.tools {
		for i, t := range mockTools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"tool_use","id":"toolu_mock_`...)
			b = strconv.AppendInt(b, int64(i+1), 10)
			b = append(b, `","name":`...)
			b = appendString(b, t.name)
			b = append(b, `,"input":`...)
			b = append(b, t.args...)
			b = append(b, '}')
		}
	} else {
		b = append(b, `{"type":"text","text":`...)
		b = appendWords(b, rep.words)
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":`...)
	b = appendString(b, rep.anthropicStop())
	b = append(b, `,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = appendInt(b, int64(c.inTok))
	b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":`...)
	b = appendInt(b, int64(rep.outTok))
	b = append(b, `}}`...)

	switch c.p.Fault {
	case FaultMalformed:
		b = b[:len(b)/2]
	case FaultBreakStream:
		c.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write(b[:len(b)/2])
		flush(c.w)
		panic(http.ErrAbortHandler)
	case FaultErrorEvent:
		writeError(c.w, c.f, 529, statusMessage(529), "")
		return
	}
	*bp = b
	c.w.Header()["Request-Id"] = []string{"req_mock_" + strconv.FormatUint(c.id, 10)}
	writeJSON(c.w, http.StatusOK, b)
}

// event appends one `event: <name>` + `data: <json>` frame.
func (s *sseWriter) event(name string, data ...[]byte) {
	s.b = append(s.b, "event: "...)
	s.b = append(s.b, name...)
	s.b = append(s.b, "\ndata: "...)
	for _, d := range data {
		s.b = append(s.b, d...)
	}
	s.b = append(s.b, "\n\n"...)
}

// anthropicStream writes the documented event sequence: message_start (empty
// content, input_tokens), a ping, per block content_block_start → deltas →
// content_block_stop, message_delta (stop_reason, cumulative output_tokens),
// message_stop.
func (c *call) anthropicStream(rep reply) {
	c.startSSE()
	bp := getBuf()
	defer putBuf(bp)
	sw := &sseWriter{w: c.w, b: *bp}
	defer func() { *bp = sw.b }()

	if c.p.Fault == FaultMalformed {
		sw.event("message_start", []byte(`{"type":"message_start","message":{"id": oops`))
		sw.flush()
		return
	}

	var d []byte
	d = append(d, `{"type":"message_start","message":{"id":`...)
	d = c.appendMessageID(d)
	d = append(d, `,"type":"message","role":"assistant","model":`...)
	d = appendString(d, c.model)
	d = append(d, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	d = appendInt(d, int64(c.inTok))
	d = append(d, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`...)
	sw.event("message_start", d)
	sw.event("ping", []byte(`{"type":"ping"}`))
	sw.flush()

	pace := func() bool {
		if c.p.ChunkDelay > 0 {
			sw.flush()
			return c.sleep(c.p.ChunkDelay)
		}
		return true
	}
	sent := 0
	cut := func() bool {
		sent++
		if sent != 2 {
			return false
		}
		switch c.p.Fault {
		case FaultErrorEvent:
			sw.event("error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
			sw.flush()
			return true
		case FaultBreakStream:
			sw.flush()
			panic(http.ErrAbortHandler) // no content_block_stop, no message_stop
		}
		return false
	}
	blockStop := func(i int) {
		d = append(d[:0], `{"type":"content_block_stop","index":`...)
		d = strconv.AppendInt(d, int64(i), 10)
		d = append(d, '}')
		sw.event("content_block_stop", d)
	}

	if rep.tools {
		for i, t := range mockTools {
			d = append(d[:0], `{"type":"content_block_start","index":`...)
			d = strconv.AppendInt(d, int64(i), 10)
			d = append(d, `,"content_block":{"type":"tool_use","id":"toolu_mock_`...)
			d = strconv.AppendInt(d, int64(i+1), 10)
			d = append(d, `","name":`...)
			d = appendString(d, t.name)
			d = append(d, `,"input":{}}}`...)
			sw.event("content_block_start", d)
			for off := 0; off < len(t.args); off += argFragment {
				if !pace() || cut() {
					return
				}
				d = append(d[:0], `{"type":"content_block_delta","index":`...)
				d = strconv.AppendInt(d, int64(i), 10)
				d = append(d, `,"delta":{"type":"input_json_delta","partial_json":`...)
				d = appendString(d, t.args[off:min(off+argFragment, len(t.args))])
				d = append(d, `}}`...)
				sw.event("content_block_delta", d)
			}
			blockStop(i)
		}
	} else {
		sw.event("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
		for i, w := range rep.words {
			if !pace() || cut() {
				return
			}
			d = append(d[:0], `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`...)
			if i > 0 {
				d = append(d, ' ')
			}
			d = appendEscaped(d, w)
			d = append(d, `"}}`...)
			sw.event("content_block_delta", d)
		}
		if sent < 2 && (c.p.Fault == FaultBreakStream || c.p.Fault == FaultErrorEvent) {
			sent = 1
			if cut() {
				return
			}
		}
		blockStop(0)
	}
	if !pace() {
		return
	}
	d = append(d[:0], `{"type":"message_delta","delta":{"stop_reason":`...)
	d = appendString(d, rep.anthropicStop())
	d = append(d, `,"stop_sequence":null},"usage":{"output_tokens":`...)
	d = appendInt(d, int64(rep.outTok))
	d = append(d, `}}`...)
	sw.event("message_delta", d)
	sw.event("message_stop", []byte(`{"type":"message_stop"}`))
	sw.flush()
}
