package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/sse"
	"github.com/llmgw/gateway/services/wire"
)

// streamEvent is any Anthropic stream event; which fields are set depends
// on Type.
type streamEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string    `json:"id"`
		Model string    `json:"model"`
		Usage wireUsage `json:"usage"`
	} `json:"message"`
	Index        int        `json:"index"`
	ContentBlock *respBlock `json:"content_block"`
	Delta        *struct {
		Type         string  `json:"type"`
		Text         string  `json:"text"`
		PartialJSON  string  `json:"partial_json"`
		Thinking     string  `json:"thinking"`
		Signature    string  `json:"signature"`
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

// StreamDecoder turns an Anthropic SSE body into canonical events.
type StreamDecoder struct {
	r     *sse.Reader
	queue []llm.Event
	head  int

	started bool
	// blocks maps upstream block indexes to canonical ones; blocks the
	// canonical form cannot carry (server tool use, redacted thinking) map
	// to -1, so canonical indexes stay gapless.
	blocks map[int]int
	next   int

	usage        llm.Usage
	finish       llm.FinishReason
	stopSequence string
	err          error
}

// NewStreamDecoder reads the upstream SSE body.
func NewStreamDecoder(body io.Reader) *StreamDecoder {
	return &StreamDecoder{r: sse.NewReader(body), queue: make([]llm.Event, 0, 2), blocks: make(map[int]int, 4)}
}

// Next returns the next canonical event, io.EOF after EventEnd, or an error:
// *provider.UpstreamError for an error event (even after HTTP 200),
// *provider.MalformedError for an event that is not JSON, and
// io.ErrUnexpectedEOF when the body ends before message_stop.
func (d *StreamDecoder) Next() (llm.Event, error) {
	for d.head >= len(d.queue) {
		if d.err != nil {
			return llm.Event{}, d.err
		}
		d.queue, d.head = d.queue[:0], 0
		d.err = d.fill()
	}
	ev := d.queue[d.head]
	d.head++
	return ev, nil
}

func (d *StreamDecoder) fill() error {
	for len(d.queue) == 0 {
		sev, err := d.r.Next()
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		data := bytes.TrimSpace(sev.Data)
		if len(data) == 0 {
			continue
		}
		done, err := d.event(data)
		if err != nil {
			if truncatedJSON(err) {
				if _, nerr := d.r.Next(); nerr == io.EOF {
					return io.ErrUnexpectedEOF // the unterminated tail of a cut body
				}
			}
			return err
		}
		if done {
			return io.EOF
		}
	}
	return nil
}

func truncatedJSON(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end of JSON input")
}

func (d *StreamDecoder) push(ev llm.Event) { d.queue = append(d.queue, ev) }

func (d *StreamDecoder) ensureStart() {
	if !d.started {
		d.started = true
		d.push(llm.Event{Type: llm.EventStart})
	}
}

// event applies one event; done reports message_stop.
func (d *StreamDecoder) event(data []byte) (done bool, err error) {
	var e streamEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return false, &provider.MalformedError{Err: err}
	}
	switch e.Type {
	case "message_start":
		if e.Message == nil {
			return false, &provider.MalformedError{Err: errors.New("message_start without message")}
		}
		e.Message.Usage.apply(&d.usage)
		u := d.usage
		d.started = true
		d.push(llm.Event{Type: llm.EventStart, ID: e.Message.ID, Model: e.Message.Model, Usage: &u})
	case "content_block_start":
		if e.ContentBlock == nil {
			return false, &provider.MalformedError{Err: errors.New("content_block_start without content_block")}
		}
		d.ensureStart()
		b := &llm.Block{}
		switch e.ContentBlock.Type {
		case "text":
			b.Type = llm.BlockText
		case "tool_use":
			b.Type, b.ToolCallID, b.ToolName = llm.BlockToolUse, e.ContentBlock.ID, e.ContentBlock.Name
		case "thinking":
			b.Type = llm.BlockThinking
		default:
			d.blocks[e.Index] = -1
			return false, nil
		}
		idx := d.next
		d.next++
		d.blocks[e.Index] = idx
		d.push(llm.Event{Type: llm.EventBlockStart, Index: idx, Block: b})
		// Blocks normally start empty; carry any initial text all the same.
		if t := e.ContentBlock.Text + e.ContentBlock.Thinking; t != "" {
			d.push(llm.Event{Type: llm.EventDelta, Index: idx, Text: t})
		}
	case "content_block_delta":
		if e.Delta == nil {
			return false, &provider.MalformedError{Err: errors.New("content_block_delta without delta")}
		}
		idx, ok := d.blocks[e.Index]
		if !ok {
			return false, &provider.MalformedError{Err: errors.New("delta for unopened block " + strconv.Itoa(e.Index))}
		}
		if idx < 0 {
			return false, nil
		}
		ev := llm.Event{Type: llm.EventDelta, Index: idx}
		switch e.Delta.Type {
		case "text_delta":
			ev.Text = e.Delta.Text
		case "input_json_delta":
			ev.PartialJSON = e.Delta.PartialJSON
		case "thinking_delta":
			ev.Text = e.Delta.Thinking
		case "signature_delta":
			ev.Signature = e.Delta.Signature
		default:
			return false, nil // citations and future delta kinds
		}
		d.push(ev)
	case "content_block_stop":
		idx, ok := d.blocks[e.Index]
		if !ok {
			return false, &provider.MalformedError{Err: errors.New("stop for unopened block " + strconv.Itoa(e.Index))}
		}
		if idx >= 0 {
			d.push(llm.Event{Type: llm.EventBlockStop, Index: idx})
		}
	case "message_delta":
		if e.Delta != nil {
			if e.Delta.StopReason != nil {
				d.finish = stopReason(*e.Delta.StopReason)
			}
			if e.Delta.StopSequence != nil {
				d.stopSequence = *e.Delta.StopSequence
			}
		}
		if e.Usage != nil {
			e.Usage.apply(&d.usage) // cumulative: set, never add
		}
	case "message_stop":
		d.ensureStart()
		fr := d.finish
		if fr == "" {
			fr = llm.FinishStop
		}
		u := d.usage
		d.push(llm.Event{Type: llm.EventEnd, FinishReason: fr, StopSequence: d.stopSequence, Usage: &u})
		return true, nil
	case "error":
		we := wireError{Type: "api_error"}
		if e.Error != nil {
			we = *e.Error
		}
		return false, &provider.UpstreamError{Status: 0, Type: we.Type, Message: we.Message}
	}
	// ping and unknown event types carry nothing for the canonical stream.
	return false, nil
}

// StreamWriter renders canonical events as Anthropic's event sequence.
// Output block indexes are the writer's own (0, 1, 2... without gaps), so
// an upstream's offset or skipped indexes never reach the client.
type StreamWriter struct {
	w     *sse.Writer
	model string
	buf   []byte

	started bool
	done    bool
	blocks  []writerBlock
	nextOut int
	open    int // position in blocks of the open block, -1 when none
}

type writerBlock struct {
	index int // canonical
	out   int // index on the wire
	kind  llm.BlockType
}

// NewStreamWriter writes to w; model is echoed in message_start.
func NewStreamWriter(w *sse.Writer, model string) *StreamWriter {
	return &StreamWriter{w: w, model: model, buf: make([]byte, 0, 512), open: -1}
}

var _ interface {
	Write(llm.Event) error
	WriteError(*apierr.Error) error
} = (*StreamWriter)(nil)

// Write renders one event. Events after the end are ignored.
func (s *StreamWriter) Write(ev llm.Event) error {
	if s.done {
		return nil
	}
	if !s.started {
		if err := s.start(ev); err != nil {
			return err
		}
	}
	switch ev.Type {
	case llm.EventBlockStart:
		if ev.Block == nil {
			return nil
		}
		return s.openBlock(ev.Index, ev.Block)
	case llm.EventDelta:
		return s.delta(ev)
	case llm.EventBlockStop:
		if s.open >= 0 && s.blocks[s.open].index == ev.Index {
			return s.closeOpen()
		}
	case llm.EventEnd:
		s.done = true
		if err := s.closeOpen(); err != nil {
			return err
		}
		b := append(s.buf[:0], `{"type":"message_delta","delta":{"stop_reason":`...)
		b = wire.AppendString(b, stopReasonOut(ev.FinishReason))
		b = append(b, `,"stop_sequence":`...)
		if ev.FinishReason == llm.FinishStopSequence && ev.StopSequence != "" {
			b = wire.AppendString(b, ev.StopSequence)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `},"usage":`...)
		var u llm.Usage
		if ev.Usage != nil {
			u = *ev.Usage
		}
		b = appendUsage(b, u, u.OutputTokens)
		b = append(b, '}')
		if err := s.emit("message_delta", b); err != nil {
			return err
		}
		return s.emit("message_stop", append(s.buf[:0], `{"type":"message_stop"}`...))
	}
	return nil
}

func appendUsage(b []byte, u llm.Usage, output int) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.InputTokens), 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CacheWriteTokens), 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CacheReadTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(output), 10)
	return append(b, '}')
}

func (s *StreamWriter) start(ev llm.Event) error {
	s.started = true
	var u llm.Usage
	if ev.Type == llm.EventStart && ev.Usage != nil {
		u = *ev.Usage
	}
	b := append(s.buf[:0], `{"type":"message_start","message":{"id":`...)
	b = wire.AppendString(b, wire.WithPrefix("msg_", ev.ID))
	b = append(b, `,"type":"message","role":"assistant","content":[],"model":`...)
	b = wire.AppendString(b, s.model)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"usage":`...)
	b = appendUsage(b, u, 0)
	b = append(b, `}}`...)
	return s.emit("message_start", b)
}

func (s *StreamWriter) openBlock(index int, blk *llm.Block) error {
	if err := s.closeOpen(); err != nil {
		return err
	}
	wb := writerBlock{index: index, out: s.nextOut, kind: blk.Type}
	b := append(s.buf[:0], `{"type":"content_block_start","index":`...)
	b = strconv.AppendInt(b, int64(wb.out), 10)
	b = append(b, `,"content_block":`...)
	switch blk.Type {
	case llm.BlockText:
		b = append(b, `{"type":"text","text":""}`...)
	case llm.BlockToolUse:
		b = append(b, `{"type":"tool_use","id":`...)
		b = wire.AppendString(b, blk.ToolCallID)
		b = append(b, `,"name":`...)
		b = wire.AppendString(b, blk.ToolName)
		b = append(b, `,"input":{}}`...)
	case llm.BlockThinking:
		b = append(b, `{"type":"thinking","thinking":""}`...)
	default:
		return nil // images and tool results do not appear in replies
	}
	b = append(b, '}')
	s.nextOut++
	s.blocks = append(s.blocks, wb)
	s.open = len(s.blocks) - 1
	return s.emit("content_block_start", b)
}

func (s *StreamWriter) closeOpen() error {
	if s.open < 0 {
		return nil
	}
	out := s.blocks[s.open].out
	s.open = -1
	b := append(s.buf[:0], `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, '}')
	return s.emit("content_block_stop", b)
}

func (s *StreamWriter) delta(ev llm.Event) error {
	if s.open < 0 || s.blocks[s.open].index != ev.Index {
		// A delta outside its open block: a text delta still reaches the
		// client in a block of its own; anything else has no valid place.
		if ev.Text == "" || s.known(ev.Index) {
			return nil
		}
		if err := s.openBlock(ev.Index, &llm.Block{Type: llm.BlockText}); err != nil {
			return err
		}
	}
	wb := s.blocks[s.open]
	b := append(s.buf[:0], `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(wb.out), 10)
	switch {
	case wb.kind == llm.BlockToolUse && ev.PartialJSON != "":
		b = append(b, `,"delta":{"type":"input_json_delta","partial_json":`...)
		b = wire.AppendString(b, ev.PartialJSON)
	case wb.kind == llm.BlockText && ev.Text != "":
		b = append(b, `,"delta":{"type":"text_delta","text":`...)
		b = wire.AppendString(b, ev.Text)
	case wb.kind == llm.BlockThinking && ev.Text != "":
		b = append(b, `,"delta":{"type":"thinking_delta","thinking":`...)
		b = wire.AppendString(b, ev.Text)
	case wb.kind == llm.BlockThinking && ev.Signature != "":
		b = append(b, `,"delta":{"type":"signature_delta","signature":`...)
		b = wire.AppendString(b, ev.Signature)
	default:
		return nil
	}
	b = append(b, `}}`...)
	return s.emit("content_block_delta", b)
}

func (s *StreamWriter) known(index int) bool {
	for i := range s.blocks {
		if s.blocks[i].index == index {
			return true
		}
	}
	return false
}

func (s *StreamWriter) emit(name string, b []byte) error {
	s.buf = b
	return s.w.WriteEvent(name, b)
}

// WriteError ends the stream with an error event: after the first byte the
// status is already 200, so the error travels in-band as Anthropic does.
func (s *StreamWriter) WriteError(e *apierr.Error) error {
	if s.done {
		return nil
	}
	s.done = true
	b := append(s.buf[:0], `{"type":"error","error":{"type":`...)
	b = wire.AppendString(b, string(e.Type))
	b = append(b, `,"message":`...)
	b = wire.AppendString(b, e.Message)
	b = append(b, `}}`...)
	return s.emit("error", b)
}
