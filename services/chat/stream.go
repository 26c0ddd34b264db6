package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/sse"
	"github.com/llmgw/gateway/services/wire"
)

type streamChunk struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Choices []streamChoice `json:"choices"` // [] or null on the usage chunk
	Usage   *wireUsage     `json:"usage"`
	Error   *wireError     `json:"error"`
}

type streamChoice struct {
	Index int `json:"index"`
	Delta struct {
		Content          *string      `json:"content"`
		Refusal          *string      `json:"refusal"`
		ReasoningContent *string      `json:"reasoning_content"`
		Reasoning        *string      `json:"reasoning"`
		ToolCalls        []streamCall `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type streamCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// StreamDecoder turns an OpenAI chat-completions SSE body into canonical
// events (pull-style: the caller's loop is the only goroutine).
type StreamDecoder struct {
	r     *sse.Reader
	queue []llm.Event
	head  int

	started  bool
	open     bool // a block is open
	openKind llm.BlockType
	next     int // next canonical block index

	toolKey   int    // upstream tool_calls index of the open tool block
	toolID    string // its id
	lastKey   int    // last upstream tool index seen (for servers that omit index)
	closedKey []int  // upstream indexes of tool calls already closed

	finish   llm.FinishReason
	finished bool
	usage    *llm.Usage
	err      error // sticky: returned again on every later call
}

// NewStreamDecoder reads the upstream SSE body.
func NewStreamDecoder(body io.Reader) *StreamDecoder {
	return &StreamDecoder{r: sse.NewReader(body), queue: make([]llm.Event, 0, 4), lastKey: -1}
}

// Next returns the next canonical event, io.EOF after EventEnd, or an error:
// *provider.UpstreamError for an error chunk, *provider.MalformedError for a
// chunk that is not JSON, io.ErrUnexpectedEOF when the body ends before the
// upstream said it was done (a cut stream).
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

// fill reads SSE events until at least one canonical event is queued or the
// stream ends; the returned error becomes sticky.
func (d *StreamDecoder) fill() error {
	for len(d.queue) == 0 {
		sev, err := d.r.Next()
		if err == io.EOF {
			if !d.finished {
				return io.ErrUnexpectedEOF
			}
			d.end()
			return io.EOF
		}
		if err != nil {
			return err
		}
		data := bytes.TrimSpace(sev.Data)
		if len(data) == 0 {
			continue // an empty keep-alive frame carries nothing to decode
		}
		if string(data) == "[DONE]" {
			d.end()
			return io.EOF
		}
		if err := d.chunk(sev.Event, data); err != nil {
			if truncatedJSON(err) {
				if _, nerr := d.r.Next(); nerr == io.EOF {
					// The unreadable chunk was the unterminated tail of a cut
					// body: a broken stream, not a malformed one.
					if d.finished {
						d.end()
						return io.EOF
					}
					return io.ErrUnexpectedEOF
				}
			}
			return err
		}
	}
	return nil
}

// truncatedJSON reports a chunk that ends mid-document, the mark of a body
// cut inside its last line.
func truncatedJSON(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end of JSON input")
}

func (d *StreamDecoder) push(ev llm.Event) { d.queue = append(d.queue, ev) }

func (d *StreamDecoder) chunk(event string, data []byte) error {
	var ch streamChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return &provider.MalformedError{Err: err}
	}
	if ch.Error != nil {
		return ch.Error.upstream()
	}
	if event == "error" {
		var e wireError
		_ = json.Unmarshal(data, &e)
		return e.upstream()
	}
	// Azure opens with a content-free chunk (empty id, prompt_filter_results);
	// the reply starts at the first chunk with an id or a choice.
	if !d.started && (ch.ID != "" || len(ch.Choices) > 0) {
		d.started = true
		d.push(llm.Event{Type: llm.EventStart, ID: ch.ID, Model: ch.Model})
	}
	if ch.Usage != nil {
		u := ch.Usage.canonical() // cumulative: the last one wins
		d.usage = &u
	}
	for i := range ch.Choices {
		c := &ch.Choices[i]
		if c.Index != 0 {
			continue // n > 1 is not supported; choice 0 is the reply
		}
		if r := reasoning(c.Delta.ReasoningContent, c.Delta.Reasoning); r != "" {
			d.text(llm.BlockThinking, r)
		}
		if c.Delta.Content != nil && *c.Delta.Content != "" {
			d.text(llm.BlockText, *c.Delta.Content)
		}
		if c.Delta.Refusal != nil && *c.Delta.Refusal != "" {
			d.text(llm.BlockText, *c.Delta.Refusal)
		}
		for j := range c.Delta.ToolCalls {
			if err := d.toolCall(&c.Delta.ToolCalls[j]); err != nil {
				return err
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			d.finish = finishReason(*c.FinishReason)
			d.finished = true
		}
	}
	return nil
}

func (d *StreamDecoder) ensureStart() {
	if !d.started {
		d.started = true
		d.push(llm.Event{Type: llm.EventStart})
	}
}

func (d *StreamDecoder) closeOpen() {
	if d.open {
		d.push(llm.Event{Type: llm.EventBlockStop, Index: d.next - 1})
		d.open = false
		if d.openKind == llm.BlockToolUse {
			d.closedKey = append(d.closedKey, d.toolKey)
		}
	}
}

func (d *StreamDecoder) openBlock(b *llm.Block) {
	d.closeOpen()
	d.ensureStart()
	d.push(llm.Event{Type: llm.EventBlockStart, Index: d.next, Block: b})
	d.next++
	d.open, d.openKind = true, b.Type
}

func (d *StreamDecoder) text(kind llm.BlockType, s string) {
	if !d.open || d.openKind != kind {
		d.openBlock(&llm.Block{Type: kind})
	}
	d.push(llm.Event{Type: llm.EventDelta, Index: d.next - 1, Text: s})
}

func (d *StreamDecoder) toolCall(tc *streamCall) error {
	key := d.lastKey
	switch {
	case tc.Index != nil:
		key = *tc.Index
	case tc.ID != "":
		key = d.lastKey + 1 // a server that omits index: a new id is a new call
	}
	d.lastKey = key
	sameCall := d.open && d.openKind == llm.BlockToolUse && key == d.toolKey && (tc.ID == "" || tc.ID == d.toolID)
	if !sameCall {
		if tc.ID == "" && tc.Function.Name == "" {
			// A fragment of a call that is not the open one: canonical blocks
			// are strictly sequential, so interleaved calls cannot be carried.
			return &provider.MalformedError{Err: errors.New("tool call fragment for tool_calls index " + strconv.Itoa(key) + " which is not open")}
		}
		id := tc.ID
		if id == "" {
			id = wire.NewID("call_")
		}
		// Some servers send index 0 for every call; a new id is a new call
		// all the same.
		d.openBlock(&llm.Block{Type: llm.BlockToolUse, ToolCallID: id, ToolName: tc.Function.Name})
		d.toolKey, d.toolID = key, tc.ID
	}
	if tc.Function.Arguments != "" {
		d.push(llm.Event{Type: llm.EventDelta, Index: d.next - 1, PartialJSON: tc.Function.Arguments})
	}
	return nil
}

func (d *StreamDecoder) end() {
	d.closeOpen()
	d.ensureStart()
	fr := d.finish
	if fr == "" {
		fr = llm.FinishStop
	}
	d.push(llm.Event{Type: llm.EventEnd, FinishReason: fr, Usage: d.usage})
}

// StreamWriter renders canonical events as an OpenAI chat-completions
// stream. Frames are built by hand from a prefix computed once per stream
// (id, created and model never change), which keeps a token's frame to a
// few appends.
type StreamWriter struct {
	w            *sse.Writer
	model        string
	includeUsage bool

	prefix  []byte // {"id":...,"choices":[
	buf     []byte
	started bool
	done    bool

	blocks []writerBlock
	tools  int // the writer's own tool-call counter: 0, 1, 2... no gaps
}

type writerBlock struct {
	index int
	kind  llm.BlockType
	tool  int
}

// NewStreamWriter writes to w; model is echoed in every chunk; includeUsage
// is the client's stream_options.include_usage.
func NewStreamWriter(w *sse.Writer, model string, includeUsage bool) *StreamWriter {
	return &StreamWriter{w: w, model: model, includeUsage: includeUsage, buf: make([]byte, 0, 512)}
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
		if err := s.start(ev.ID); err != nil {
			return err
		}
	}
	switch ev.Type {
	case llm.EventBlockStart:
		if ev.Block == nil {
			return nil
		}
		wb := writerBlock{index: ev.Index, kind: ev.Block.Type, tool: -1}
		if wb.kind == llm.BlockToolUse {
			wb.tool = s.tools
			s.tools++
			b := s.open(`{"tool_calls":[{"index":`)
			b = strconv.AppendInt(b, int64(wb.tool), 10)
			b = append(b, `,"id":`...)
			b = wire.AppendString(b, ev.Block.ToolCallID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = wire.AppendString(b, ev.Block.ToolName)
			b = append(b, `,"arguments":""}}]}`...)
			s.blocks = append(s.blocks, wb)
			return s.close(b, "")
		}
		s.blocks = append(s.blocks, wb)
	case llm.EventDelta:
		wb := s.block(ev.Index)
		switch {
		case wb.kind == llm.BlockToolUse && ev.PartialJSON != "":
			b := s.open(`{"tool_calls":[{"index":`)
			b = strconv.AppendInt(b, int64(wb.tool), 10)
			b = append(b, `,"function":{"arguments":`...)
			b = wire.AppendString(b, ev.PartialJSON)
			b = append(b, `}}]}`...)
			return s.close(b, "")
		case wb.kind == llm.BlockText && ev.Text != "":
			b := s.open(`{"content":`)
			b = wire.AppendString(b, ev.Text)
			b = append(b, '}')
			return s.close(b, "")
		}
		// thinking and signatures have no chat-completions equivalent
	case llm.EventEnd:
		s.done = true
		if err := s.close(s.open(`{}`), finishOut(ev.FinishReason)); err != nil {
			return err
		}
		if s.includeUsage && ev.Usage != nil {
			if err := s.writeUsage(ev.Usage); err != nil {
				return err
			}
		}
		return s.w.WriteData(done)
	}
	return nil
}

var done = []byte("[DONE]")

// block finds the canonical block; a delta for a block never opened is
// treated as text (the most any client can make of it).
func (s *StreamWriter) block(index int) writerBlock {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		if s.blocks[i].index == index {
			return s.blocks[i]
		}
	}
	return writerBlock{index: index, kind: llm.BlockText, tool: -1}
}

func (s *StreamWriter) start(id string) error {
	s.started = true
	b := append(s.prefix[:0], `{"id":`...)
	b = wire.AppendString(b, wire.WithPrefix("chatcmpl-", id))
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"model":`...)
	b = wire.AppendString(b, s.model)
	s.prefix = append(b, `,"choices":[`...)
	return s.close(s.open(`{"role":"assistant","content":""}`), "")
}

// open starts a chunk with one choice whose delta begins with delta.
func (s *StreamWriter) open(delta string) []byte {
	b := append(s.buf[:0], s.prefix...)
	b = append(b, `{"index":0,"delta":`...)
	return append(b, delta...)
}

// close ends the delta, the choice and the chunk, and writes it.
func (s *StreamWriter) close(b []byte, finish string) error {
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = wire.AppendString(b, finish)
	}
	b = append(b, '}', ']')
	if s.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	b = append(b, '}')
	s.buf = b
	return s.w.WriteData(b)
}

func (s *StreamWriter) writeUsage(u *llm.Usage) error {
	b := append(s.buf[:0], s.prefix...)
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens()), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens()), 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CacheReadTokens), 10)
	b = append(b, `}}}`...)
	s.buf = b
	return s.w.WriteData(b)
}

// WriteError ends the stream with an error chunk and [DONE]: after the
// first byte the status is already 200, so the error travels in-band.
func (s *StreamWriter) WriteError(e *apierr.Error) error {
	if s.done {
		return nil
	}
	s.done = true
	b := append(s.buf[:0], `{"error":{"message":`...)
	b = wire.AppendString(b, e.Message)
	b = append(b, `,"type":`...)
	b = wire.AppendString(b, string(e.Type))
	b = append(b, `,"code":null}}`...)
	s.buf = b
	if err := s.w.WriteData(b); err != nil {
		return err
	}
	return s.w.WriteData(done)
}
