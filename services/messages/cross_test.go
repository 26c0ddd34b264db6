package messages

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/chat"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/sse"
)

// An OpenAI transcript with text and two parallel tool calls.
const openAITools = `data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Checking."},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get","arguments":"{\"city\":\"Rome\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129,"prompt_tokens_details":{"cached_tokens":100}}}

data: [DONE]

`

type eventWriter interface {
	Write(llm.Event) error
	WriteError(*apierr.Error) error
}

// pipe runs a decoder into a writer as the gateway does, ending with an
// error frame when the upstream breaks.
func pipe(d interface{ Next() (llm.Event, error) }, w eventWriter) error {
	for {
		ev, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			_ = w.WriteError(apierr.Provider("The upstream stream broke.", nil))
			return err
		}
		if err := w.Write(ev); err != nil {
			return err
		}
	}
}

// OpenAI upstream → /v1/messages client: tool arguments must arrive as
// input_json_delta (dropping them is a common gateway bug).
func TestOpenAIStreamToMessages(t *testing.T) {
	eachReader(openAITools, func(how string, r io.Reader) {
		var buf bytes.Buffer
		if err := pipe(chat.NewStreamDecoder(r), NewStreamWriter(sse.NewWriter(&buf, nil), "alias")); err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		fs := parseFrames(t, buf.Bytes())
		var seq []string
		for _, f := range fs {
			s := f.name
			if idx, ok := f.v["index"]; ok {
				s += ":" + js(idx)
			}
			if d, ok := f.v["delta"].(map[string]any); ok && d["type"] != nil {
				s += ":" + d["type"].(string)
			}
			seq = append(seq, s)
		}
		want := "message_start,content_block_start:0,content_block_delta:0:text_delta,content_block_stop:0," +
			"content_block_start:1,content_block_delta:1:input_json_delta,content_block_delta:1:input_json_delta,content_block_stop:1," +
			"content_block_start:2,content_block_delta:2:input_json_delta,content_block_stop:2,message_delta,message_stop"
		if got := strings.Join(seq, ","); got != want {
			t.Fatalf("%s: sequence\n got %s\nwant %s", how, got, want)
		}
		var args string
		for _, f := range fs[5:7] {
			args += f.v["delta"].(map[string]any)["partial_json"].(string)
		}
		if args != `{"city":"Paris"}` {
			t.Fatalf("arguments %q", args)
		}
		md := fs[len(fs)-2].data
		if !strings.Contains(md, `"stop_reason":"tool_use"`) || !strings.Contains(md, `"usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":9}`) {
			t.Fatalf("%s: message_delta %s", how, md)
		}
	})
}

// Anthropic upstream → /v1/chat/completions client.
func TestAnthropicStreamToChat(t *testing.T) {
	eachReader(fixture, func(how string, r io.Reader) {
		var buf bytes.Buffer
		if err := pipe(NewStreamDecoder(r), chat.NewStreamWriter(sse.NewWriter(&buf, nil), "alias", true)); err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		frames := chatFrames(t, buf.Bytes())
		want := []string{
			`{"role":"assistant","content":""}`,
			`{"content":"Checking \"now\""}`,
			`{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"get","arguments":""}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Paris\"}"}}]}`,
			`{}|tool_calls`,
			`usage:{"prompt_tokens":35,"completion_tokens":42,"total_tokens":77,"prompt_tokens_details":{"cached_tokens":10}}`,
			`[DONE]`,
		}
		if strings.Join(frames, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s:\n got %s\nwant %s", how, strings.Join(frames, "\n"), strings.Join(want, "\n"))
		}
	})
}

// A cut Anthropic stream reaches a chat client as an error chunk and [DONE].
func TestCutStreamToChat(t *testing.T) {
	var buf bytes.Buffer
	cut := fixture[:strings.Index(fixture, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}")]
	if err := pipe(NewStreamDecoder(strings.NewReader(cut)), chat.NewStreamWriter(sse.NewWriter(&buf, nil), "alias", false)); err != io.ErrUnexpectedEOF {
		t.Fatalf("err %v", err)
	}
	frames := chatFrames(t, buf.Bytes())
	if frames[len(frames)-2] != `error:provider_error` || frames[len(frames)-1] != "[DONE]" {
		t.Fatalf("frames %v", frames)
	}
}

// chatFrames summarises a chat stream: each delta as raw JSON (with
// "|finish" when set), usage chunks, error chunks and [DONE]. It checks
// the invariants every chunk must hold on the way.
func chatFrames(t testing.TB, out []byte) []string {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out))
	var res []string
	id := ""
	nextTool := 0
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return res
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) == "[DONE]" {
			res = append(res, "[DONE]")
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
			Error *struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatalf("chunk is not JSON: %s", ev.Data)
		}
		if c.Error != nil {
			res = append(res, "error:"+c.Error.Type)
			continue
		}
		if c.Object != "chat.completion.chunk" || (id != "" && c.ID != id) {
			t.Fatalf("chunk header: %s", ev.Data)
		}
		id = c.ID
		if len(c.Choices) == 0 {
			res = append(res, "usage:"+string(c.Usage))
			continue
		}
		var d struct {
			ToolCalls []struct {
				Index int     `json:"index"`
				ID    *string `json:"id"`
			} `json:"tool_calls"`
		}
		_ = json.Unmarshal(c.Choices[0].Delta, &d)
		for _, tc := range d.ToolCalls {
			if tc.ID != nil {
				if tc.Index != nextTool {
					t.Fatalf("tool index %d, want %d (no gaps)", tc.Index, nextTool)
				}
				nextTool++
			} else if tc.Index >= nextTool {
				t.Fatalf("fragment for tool %d never started", tc.Index)
			}
		}
		s := string(c.Choices[0].Delta)
		if f := c.Choices[0].FinishReason; f != nil {
			s += "|" + *f
		}
		res = append(res, s)
	}
}

// checkMessagesFrames checks a messages stream's invariants: valid JSON,
// block indexes 0.. without gaps, deltas and stops only for the open block.
func checkMessagesFrames(t *testing.T, out []byte) {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out))
	open, next := -1, 0
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Type  string `json:"type"`
			Index *int   `json:"index"`
		}
		if err := json.Unmarshal(ev.Data, &f); err != nil {
			t.Fatalf("frame is not JSON: %s", ev.Data)
		}
		if f.Type != ev.Event {
			t.Fatalf("event %q with type %q", ev.Event, f.Type)
		}
		switch f.Type {
		case "content_block_start":
			if open != -1 || *f.Index != next {
				t.Fatalf("block start %d (open %d, next %d)", *f.Index, open, next)
			}
			open = next
			next++
		case "content_block_delta":
			if *f.Index != open {
				t.Fatalf("delta for %d, open %d", *f.Index, open)
			}
		case "content_block_stop":
			if *f.Index != open {
				t.Fatalf("stop for %d, open %d", *f.Index, open)
			}
			open = -1
		case "message_delta":
			if open != -1 {
				t.Fatal("message_delta with a block open")
			}
		}
	}
}

func FuzzChatStreamToMessages(f *testing.F) {
	f.Add([]byte(openAITools))
	f.Add([]byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\",\"reasoning_content\":\"r\"},\"finish_reason\":\"stop\"}]}\n\n"))
	f.Add([]byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\"}},{\"index\":0,\"id\":\"b\"}]}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var buf bytes.Buffer
		_ = pipe(chat.NewStreamDecoder(bytes.NewReader(in)), NewStreamWriter(sse.NewWriter(&buf, nil), "alias"))
		checkMessagesFrames(t, buf.Bytes())
	})
}

func FuzzMessagesStreamToChat(f *testing.F) {
	f.Add([]byte(fixture))
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"o\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n\ndata: {\"type\":\"content_block_start\",\"index\":4,\"content_block\":{\"type\":\"tool_use\",\"id\":\"u\",\"name\":\"n\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, includeUsage := range []bool{false, true} {
			var buf bytes.Buffer
			_ = pipe(NewStreamDecoder(bytes.NewReader(in)), chat.NewStreamWriter(sse.NewWriter(&buf, nil), "alias", includeUsage))
			frames := chatFrames(t, buf.Bytes()) // checks JSON and tool indexes
			for i, f := range frames {
				if f == "[DONE]" && i != len(frames)-1 {
					t.Fatalf("[DONE] not last: %v", frames)
				}
				if !includeUsage && strings.HasPrefix(f, "usage:") {
					t.Fatal("usage chunk the client did not ask for")
				}
			}
			if len(frames) > 0 && frames[len(frames)-1] != "[DONE]" {
				t.Fatalf("stream does not end with [DONE]: %v", frames)
			}
		}
	})
}

func FuzzMessagesDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"c","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}],"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"any"},"x\u0041":1}`))
	f.Add([]byte(`{"model":1,"messages":[1,{"role":2}],"max_tokens":-1}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := DecodeRequest(in)
		if err != nil {
			if e, ok := err.(*apierr.Error); !ok || e.Status != 400 {
				t.Fatalf("error is not a 400 *apierr.Error: %v", err)
			}
			return
		}
		for _, enc := range []func(*llm.Request, string) ([]byte, error){EncodeRequest, chat.EncodeRequest} {
			b, err := enc(req, "m")
			if err != nil || !json.Valid(b) {
				t.Fatalf("encode: %v %s", err, b)
			}
		}
	})
}
