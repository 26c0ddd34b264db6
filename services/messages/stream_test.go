package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/sse"
)

// A transcript recorded from Anthropic (ids shortened): thinking, text,
// tool_use, a ping in the middle, two cumulative message_delta events.
const fixture = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":10,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking \"now\""}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Paris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}

event: message_stop
data: {"type":"message_stop"}

`

func blk(b llm.Block) *llm.Block { return &b }

var wantEvents = []llm.Event{
	{Type: llm.EventStart, ID: "msg_1", Model: "claude-x", Usage: &llm.Usage{InputTokens: 25, OutputTokens: 1, CacheReadTokens: 10}},
	{Type: llm.EventBlockStart, Index: 0, Block: blk(llm.Block{Type: llm.BlockThinking})},
	{Type: llm.EventDelta, Index: 0, Text: "Let me think"},
	{Type: llm.EventDelta, Index: 0, Signature: "EqQB"},
	{Type: llm.EventBlockStop, Index: 0},
	{Type: llm.EventBlockStart, Index: 1, Block: blk(llm.Block{Type: llm.BlockText})},
	{Type: llm.EventDelta, Index: 1, Text: `Checking "now"`},
	{Type: llm.EventBlockStop, Index: 1},
	{Type: llm.EventBlockStart, Index: 2, Block: blk(llm.Block{Type: llm.BlockToolUse, ToolCallID: "toolu_1", ToolName: "get"})},
	{Type: llm.EventDelta, Index: 2},
	{Type: llm.EventDelta, Index: 2, PartialJSON: `{"city": "Paris"}`},
	{Type: llm.EventBlockStop, Index: 2},
	{Type: llm.EventEnd, FinishReason: llm.FinishToolUse, Usage: &llm.Usage{InputTokens: 25, OutputTokens: 42, CacheReadTokens: 10}},
}

func collect(d interface{ Next() (llm.Event, error) }) ([]llm.Event, error) {
	var out []llm.Event
	for {
		ev, err := d.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// eachReader feeds s whole, one byte at a time, in halves, and split at
// every byte boundary.
func eachReader(s string, f func(how string, r io.Reader)) {
	f("whole", strings.NewReader(s))
	f("one byte", iotest.OneByteReader(strings.NewReader(s)))
	f("half", iotest.HalfReader(strings.NewReader(s)))
	for k := 0; k <= len(s); k++ {
		f("split", io.MultiReader(strings.NewReader(s[:k]), strings.NewReader(s[k:])))
	}
}

func TestStreamDecoder(t *testing.T) {
	cut := strings.Index(fixture, "event: message_delta")
	errorAfterText := fixture[:strings.Index(fixture, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2")] +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	tests := []struct {
		name string
		in   string
		want []llm.Event
		err  error
	}{
		{"thinking, text, tool_use, ping", fixture, wantEvents, nil},
		{"truncated before message_stop", fixture[:cut], wantEvents[:12], io.ErrUnexpectedEOF},
		{"truncated mid-line", fixture[:cut+30], wantEvents[:12], io.ErrUnexpectedEOF},
		{"error event after 200", errorAfterText, wantEvents[:8], &provider.UpstreamError{Type: "overloaded_error", Message: "Overloaded"}},
		{"empty body", "", nil, io.ErrUnexpectedEOF},
		{"unsupported blocks skipped, indexes stay gapless; stop sequence",
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n" +
				"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\"}}\n\n" +
				"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
				"data: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
				"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
				"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" +
				"data: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
				"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"stop_sequence\",\"stop_sequence\":\"END\"},\"usage\":{\"input_tokens\":4,\"output_tokens\":2}}\n\n" +
				"data: {\"type\":\"message_stop\"}",
			[]llm.Event{{Type: llm.EventStart, ID: "m", Model: "c", Usage: &llm.Usage{InputTokens: 3}},
				{Type: llm.EventBlockStart, Block: blk(llm.Block{Type: llm.BlockText})}, {Type: llm.EventDelta, Text: "x"}, {Type: llm.EventBlockStop},
				{Type: llm.EventEnd, FinishReason: llm.FinishStopSequence, StopSequence: "END", Usage: &llm.Usage{InputTokens: 4, OutputTokens: 2}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachReader(tt.in, func(how string, r io.Reader) {
				got, err := collect(NewStreamDecoder(r))
				if tt.err != nil {
					if !reflect.DeepEqual(err, tt.err) && !errors.Is(err, tt.err) {
						t.Fatalf("%s: err %v, want %v", how, err, tt.err)
					}
				} else if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("%s:\n got %s\nwant %s", how, js(got), js(tt.want))
				}
			})
		})
	}
}

func TestStreamDecoderMalformed(t *testing.T) {
	var me *provider.MalformedError
	for _, in := range []string{
		"event: message_start\ndata: {not json}\n\n",
		"data: {\"type\":\"content_block_delta\",\"index\":5,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
		"data: {\"type\":\"message_start\"}\n\n",
	} {
		if _, err := collect(NewStreamDecoder(strings.NewReader(in))); !errors.As(err, &me) {
			t.Errorf("%q: want MalformedError, got %v", in, err)
		}
	}
}

type frame struct {
	name string
	data string
	v    map[string]any
}

func parseFrames(t testing.TB, out []byte) []frame {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out))
	var fs []frame
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return fs
		}
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			t.Fatalf("frame %q is not JSON: %s", ev.Event, ev.Data)
		}
		if v["type"] != ev.Event {
			t.Fatalf("event %q carries type %v", ev.Event, v["type"])
		}
		fs = append(fs, frame{ev.Event, string(ev.Data), v})
	}
}

func shift(evs []llm.Event, by int) []llm.Event {
	out := make([]llm.Event, len(evs))
	for i, e := range evs {
		if e.Type != llm.EventStart && e.Type != llm.EventEnd {
			e.Index += by
		}
		out[i] = e
	}
	return out
}

func TestStreamWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil), "alias")
	// Canonical indexes offset by 5 and the last block left open: the wire
	// still counts from 0 and closes the block before message_delta.
	evs := shift(wantEvents, 5)
	evs = append(evs[:11], evs[12])
	for _, ev := range evs {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`event: message_start|{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"alias","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":10,"output_tokens":0}}}`,
		`event: content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`event: content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}`,
		`event: content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`,
		`event: content_block_stop|{"type":"content_block_stop","index":0}`,
		`event: content_block_start|{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta|{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking \"now\""}}`,
		`event: content_block_stop|{"type":"content_block_stop","index":1}`,
		`event: content_block_start|{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get","input":{}}}`,
		`event: content_block_delta|{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Paris\"}"}}`,
		`event: content_block_stop|{"type":"content_block_stop","index":2}`,
		`event: message_delta|{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":10,"output_tokens":42}}`,
		`event: message_stop|{"type":"message_stop"}`,
	}
	fs := parseFrames(t, buf.Bytes())
	if len(fs) != len(want) {
		t.Fatalf("%d frames, want %d:\n%s", len(fs), len(want), buf.String())
	}
	for i, f := range fs {
		if got := "event: " + f.name + "|" + f.data; got != want[i] {
			t.Errorf("frame %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	if !strings.HasSuffix(buf.String(), "\n\n") {
		t.Fatal("stream not terminated by a blank line")
	}
}

func TestStreamWriterError(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil), "m")
	for _, ev := range wantEvents[:7] {
		_ = w.Write(ev)
	}
	if err := w.WriteError(apierr.Provider("The upstream stream broke.", nil)); err != nil {
		t.Fatal(err)
	}
	_ = w.Write(wantEvents[12])
	fs := parseFrames(t, buf.Bytes())
	last := fs[len(fs)-1]
	if last.name != "error" || last.data != `{"type":"error","error":{"type":"provider_error","message":"The upstream stream broke."}}` {
		t.Fatalf("last frame %s %s", last.name, last.data)
	}
}

func TestStreamWriterStopSequence(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil), "m")
	_ = w.Write(llm.Event{Type: llm.EventDelta, Text: "orphan text"}) // no start, no block: still well-formed
	_ = w.Write(llm.Event{Type: llm.EventEnd, FinishReason: llm.FinishStopSequence, StopSequence: "END"})
	fs := parseFrames(t, buf.Bytes())
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	if strings.Join(names, ",") != "message_start,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop" {
		t.Fatalf("sequence %v", names)
	}
	if !strings.Contains(fs[4].data, `"stop_reason":"stop_sequence","stop_sequence":"END"`) {
		t.Fatalf("message_delta %s", fs[4].data)
	}
}
