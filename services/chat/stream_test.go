package chat

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
	"github.com/llmgw/gateway/services/wire"
)

// Transcripts recorded from OpenAI-compatible upstreams (ids shortened).
const (
	fixtureText = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"lo \"there\"\n"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}}

data: [DONE]

`
	fixtureTools = `data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Checking."},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\":\"Rome\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":null,"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}

data: [DONE]

`
)

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

func blk(b llm.Block) *llm.Block { return &b }

var (
	wantText = []llm.Event{
		{Type: llm.EventStart, ID: "chatcmpl-1", Model: "gpt-4o"},
		{Type: llm.EventBlockStart, Index: 0, Block: blk(llm.Block{Type: llm.BlockText})},
		{Type: llm.EventDelta, Index: 0, Text: "Hel"},
		{Type: llm.EventDelta, Index: 0, Text: "lo \"there\"\n"},
		{Type: llm.EventBlockStop, Index: 0},
		{Type: llm.EventEnd, FinishReason: llm.FinishStop, Usage: &llm.Usage{InputTokens: 6, OutputTokens: 2, CacheReadTokens: 4}},
	}
	wantTools = []llm.Event{
		{Type: llm.EventStart, ID: "chatcmpl-2", Model: "gpt-4o"},
		{Type: llm.EventBlockStart, Index: 0, Block: blk(llm.Block{Type: llm.BlockText})},
		{Type: llm.EventDelta, Index: 0, Text: "Checking."},
		{Type: llm.EventBlockStop, Index: 0},
		{Type: llm.EventBlockStart, Index: 1, Block: blk(llm.Block{Type: llm.BlockToolUse, ToolCallID: "call_a", ToolName: "get"})},
		{Type: llm.EventDelta, Index: 1, PartialJSON: `{"ci`},
		{Type: llm.EventDelta, Index: 1, PartialJSON: `ty":"Paris"}`},
		{Type: llm.EventBlockStop, Index: 1},
		{Type: llm.EventBlockStart, Index: 2, Block: blk(llm.Block{Type: llm.BlockToolUse, ToolCallID: "call_b", ToolName: "get"})},
		{Type: llm.EventDelta, Index: 2, PartialJSON: `{"city":"Rome"}`},
		{Type: llm.EventBlockStop, Index: 2},
		{Type: llm.EventEnd, FinishReason: llm.FinishToolUse, Usage: &llm.Usage{InputTokens: 20, OutputTokens: 9}},
	}
)

// readers yields the fixture through every reader shape the upstream body
// may have: whole, one byte at a time, and split at every byte boundary.
func readers(s string) map[string]func() io.Reader {
	m := map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(s) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	return m
}

func splits(s string, f func(io.Reader)) {
	for k := 0; k <= len(s); k++ {
		f(io.MultiReader(strings.NewReader(s[:k]), strings.NewReader(s[k:])))
	}
}

func TestStreamDecoder(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []llm.Event
		err  error
	}{
		{"text with usage chunk choices []", fixtureText, wantText, nil},
		{"two parallel tool calls, usage chunk choices null", fixtureTools, wantTools, nil},
		{"no usage, EOF after finish without DONE",
			"data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}]}\n\n",
			[]llm.Event{{Type: llm.EventStart, ID: "c", Model: "m"}, {Type: llm.EventBlockStart, Block: blk(llm.Block{Type: llm.BlockText})},
				{Type: llm.EventDelta, Text: "x"}, {Type: llm.EventBlockStop}, {Type: llm.EventEnd, FinishReason: llm.FinishLength}}, nil},
		{"azure filter chunk first, keep-alive comment",
			"data: {\"id\":\"\",\"model\":\"\",\"choices\":[],\"prompt_filter_results\":[]}\n\n: ping\n\ndata: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
			[]llm.Event{{Type: llm.EventStart, ID: "c", Model: "m"}, {Type: llm.EventBlockStart, Block: blk(llm.Block{Type: llm.BlockText})},
				{Type: llm.EventDelta, Text: "x"}, {Type: llm.EventBlockStop}, {Type: llm.EventEnd, FinishReason: llm.FinishStop}}, nil},
		{"index 0 for every call (known upstream bug) still two calls",
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n" +
				"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
			[]llm.Event{{Type: llm.EventStart, ID: "c"},
				{Type: llm.EventBlockStart, Block: blk(llm.Block{Type: llm.BlockToolUse, ToolCallID: "a", ToolName: "f"})}, {Type: llm.EventDelta, PartialJSON: "{}"}, {Type: llm.EventBlockStop},
				{Type: llm.EventBlockStart, Index: 1, Block: blk(llm.Block{Type: llm.BlockToolUse, ToolCallID: "b", ToolName: "g"})}, {Type: llm.EventDelta, Index: 1, PartialJSON: "{}"}, {Type: llm.EventBlockStop, Index: 1},
				{Type: llm.EventEnd, FinishReason: llm.FinishToolUse}}, nil},
		{"reasoning becomes thinking",
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\ndata: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
			[]llm.Event{{Type: llm.EventStart, ID: "c"}, {Type: llm.EventBlockStart, Block: blk(llm.Block{Type: llm.BlockThinking})}, {Type: llm.EventDelta, Text: "hm"}, {Type: llm.EventBlockStop},
				{Type: llm.EventBlockStart, Index: 1, Block: blk(llm.Block{Type: llm.BlockText})}, {Type: llm.EventDelta, Index: 1, Text: "ok"}, {Type: llm.EventBlockStop, Index: 1},
				{Type: llm.EventEnd, FinishReason: llm.FinishStop}}, nil},
		{"truncated before finish", fixtureText[:strings.Index(fixtureText, `{},"logprobs":null,"finish_reason":"stop"`)-40], wantText[:4], io.ErrUnexpectedEOF},
		{"empty body", "", nil, io.ErrUnexpectedEOF},
		{"error chunk mid-stream", strings.SplitAfter(fixtureText, "\n\n")[1] + "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":null}}\n\n",
			nil, &provider.UpstreamError{Type: "server_error", Message: "overloaded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, r io.Reader) {
				t.Helper()
				got, err := collect(NewStreamDecoder(r))
				if tt.err != nil {
					if !reflect.DeepEqual(err, tt.err) && !errors.Is(err, tt.err) {
						t.Fatalf("%s: err %v, want %v", how, err, tt.err)
					}
				} else if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("%s:\n got %s\nwant %s", how, js(got), js(tt.want))
				}
			}
			for how, r := range readers(tt.in) {
				check(how, r())
			}
			splits(tt.in, func(r io.Reader) { check("split", r) })
		})
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestStreamDecoderMalformed(t *testing.T) {
	_, err := collect(NewStreamDecoder(strings.NewReader("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: {nope\n\n")))
	var me *provider.MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("want MalformedError, got %v", err)
	}
	// Sticky: the decoder keeps answering the same error.
	d := NewStreamDecoder(strings.NewReader("data: {nope\n\n"))
	_, e1 := d.Next()
	_, e2 := d.Next()
	if e1 == nil || e1 != e2 {
		t.Fatalf("not sticky: %v %v", e1, e2)
	}
	// Interleaved fragments cannot be represented and are reported.
	_, err = collect(NewStreamDecoder(strings.NewReader(
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\"}},{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"g\"}},{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n")))
	if !errors.As(err, &me) {
		t.Fatalf("interleaved: want MalformedError, got %v", err)
	}
}

// frame is one parsed data frame of a chat stream.
type frame struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int    `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error *struct {
		Message, Type string
	} `json:"error"`
	raw  string
	done bool
}

func parseFrames(t testing.TB, out []byte) []frame {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out))
	var fs []frame
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event != "" {
			t.Fatalf("chat stream has a named event %q", ev.Event)
		}
		if string(ev.Data) == "[DONE]" {
			fs = append(fs, frame{done: true, raw: "[DONE]"})
			continue
		}
		var f frame
		dec := json.NewDecoder(bytes.NewReader(ev.Data))
		dec.DisallowUnknownFields()
		if err := json.Unmarshal(ev.Data, &f); err != nil {
			t.Fatalf("frame is not JSON: %s: %v", ev.Data, err)
		}
		f.raw = string(ev.Data)
		fs = append(fs, f)
	}
	return fs
}

func writeAll(t testing.TB, w *StreamWriter, evs []llm.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStreamWriter(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		var buf bytes.Buffer
		w := NewStreamWriter(sse.NewWriter(&buf, nil), "alias", includeUsage)
		writeAll(t, w, append(append([]llm.Event{}, wantTools[:4]...), append([]llm.Event{
			{Type: llm.EventBlockStart, Index: 1, Block: blk(llm.Block{Type: llm.BlockThinking})},
			{Type: llm.EventDelta, Index: 1, Text: "secret thoughts"},
			{Type: llm.EventDelta, Index: 1, Signature: "sig"},
			{Type: llm.EventBlockStop, Index: 1}}, shift(wantTools[4:], 1)...)...))
		fs := parseFrames(t, buf.Bytes())
		want := []string{
			`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]%U%}`,
			`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[{"index":0,"delta":{"content":"Checking."},"logprobs":null,"finish_reason":null}]%U%}`,
			`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get","arguments":""}}]},"logprobs":null,"finish_reason":null}]%U%}`,
			`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"logprobs":null,"finish_reason":null}]%U%}`,
			`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]%U%}`,
			`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get","arguments":""}}]},"logprobs":null,"finish_reason":null}]%U%}`,
			`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\":\"Rome\"}"}}]},"logprobs":null,"finish_reason":null}]%U%}`,
			`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]%U%}`,
		}
		if includeUsage {
			want = append(want, `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":%C%,"model":"alias","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}}}`)
		}
		want = append(want, "[DONE]")
		if len(fs) != len(want) {
			t.Fatalf("includeUsage=%v: %d frames, want %d:\n%s", includeUsage, len(fs), len(want), buf.String())
		}
		created := fs[0].Created
		for i, f := range fs {
			w := strings.ReplaceAll(want[i], "%C%", js(created))
			u := ""
			if includeUsage {
				u = `,"usage":null`
			}
			w = strings.ReplaceAll(w, "%U%", u)
			if f.raw != w {
				t.Errorf("includeUsage=%v frame %d:\n got %s\nwant %s", includeUsage, i, f.raw, w)
			}
		}
	}
}

func shift(evs []llm.Event, by int) []llm.Event {
	out := make([]llm.Event, len(evs))
	for i, e := range evs {
		if e.Type != llm.EventEnd {
			e.Index += by
		}
		out[i] = e
	}
	return out
}

func TestStreamWriterError(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil), "m", false)
	writeAll(t, w, wantText[:3])
	if err := w.WriteError(apierr.Provider("The upstream stream broke.", nil)); err != nil {
		t.Fatal(err)
	}
	_ = w.Write(wantText[5]) // ignored after the end
	fs := parseFrames(t, buf.Bytes())
	if len(fs) != 4 || fs[2].Error == nil || fs[2].Error.Type != "provider_error" || fs[2].Error.Message != "The upstream stream broke." || !fs[3].done {
		t.Fatalf("frames: %s", buf.String())
	}
	if !strings.Contains(fs[2].raw, `"code":null`) {
		t.Fatalf("error frame: %s", fs[2].raw)
	}
}

// The generated id is stable across chunks and a missing start is tolerated.
func TestStreamWriterNoStart(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil), "m", true)
	writeAll(t, w, wantText[1:5])
	writeAll(t, w, []llm.Event{{Type: llm.EventEnd, FinishReason: llm.FinishStop}}) // no usage: no usage chunk
	fs := parseFrames(t, buf.Bytes())
	if len(fs) != 5 || !fs[4].done {
		t.Fatalf("frames:\n%s", buf.String())
	}
	for _, f := range fs[:4] {
		if f.ID != fs[0].ID || !strings.HasPrefix(f.ID, "chatcmpl-") || f.Created != fs[0].Created {
			t.Fatalf("id/created differ: %s", buf.String())
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\x00\x01\x1f\n\r\t", "é漢字🙂", "bad\xffutf8", "\u2028\u2029", "<&>"} {
		got := wire.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q → %s: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Fatalf("%q: got %q want %q", s, back, wantBack)
		}
	}
}
