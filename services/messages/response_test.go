package messages

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/llmgw/gateway/services/chat"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
)

func TestDecodeResponse(t *testing.T) {
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[
		{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"a"},{"type":"server_tool_use","id":"s"},{"type":"text","text":"b"},
		{"type":"tool_use","id":"t1","name":"get","input":{"city":"Paris"}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20}}`
	got, err := DecodeResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{ID: "msg_1", Model: "claude-x", FinishReason: llm.FinishToolUse,
		Usage: llm.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100, CacheWriteTokens: 20},
		Content: []llm.Block{{Type: llm.BlockThinking, Text: "hm", Signature: "sig"}, text("a"), text("b"),
			{Type: llm.BlockToolUse, ToolCallID: "t1", ToolName: "get", ToolInput: json.RawMessage(`{"city":"Paris"}`)}}}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("got %+v\nwant %+v", *got, want)
	}
	// Every text block reaches a chat client, concatenated; usage becomes
	// OpenAI's inclusive prompt_tokens.
	b, _ := chat.EncodeResponse(got, "alias")
	jsonEqual(t, b, `{"id":"chatcmpl-msg_1","object":"chat.completion","created":`+js(gotCreated(b))+`,"model":"alias","choices":[{"index":0,"message":{"role":"assistant","content":"ab","refusal":null,
		"tool_calls":[{"id":"t1","type":"function","function":{"name":"get","arguments":"{\"city\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":130,"completion_tokens":5,"total_tokens":135,"prompt_tokens_details":{"cached_tokens":100}}}`)
}

func gotCreated(b []byte) int64 {
	var v struct{ Created int64 }
	_ = json.Unmarshal(b, &v)
	return v.Created
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestStopReasons(t *testing.T) {
	for _, c := range []struct {
		in   string
		r    llm.FinishReason
		out  string // back to messages
		chat string
	}{
		{"end_turn", llm.FinishStop, "end_turn", "stop"},
		{"stop_sequence", llm.FinishStopSequence, "stop_sequence", "stop"},
		{"pause_turn", llm.FinishPauseTurn, "pause_turn", "stop"},
		{"max_tokens", llm.FinishLength, "max_tokens", "length"},
		{"model_context_window_exceeded", llm.FinishLength, "max_tokens", "length"},
		{"tool_use", llm.FinishToolUse, "tool_use", "tool_calls"},
		{"refusal", llm.FinishContentFilter, "refusal", "content_filter"},
	} {
		resp, err := DecodeResponse([]byte(`{"type":"message","content":[],"stop_reason":"` + c.in + `","stop_sequence":"ZZ"}`))
		if err != nil {
			t.Fatal(err)
		}
		if resp.FinishReason != c.r {
			t.Errorf("%s → %s, want %s", c.in, resp.FinishReason, c.r)
		}
		var m struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		}
		b, _ := EncodeResponse(resp, "m")
		_ = json.Unmarshal(b, &m)
		if m.StopReason != c.out {
			t.Errorf("%s → messages %s, want %s", c.in, m.StopReason, c.out)
		}
		if (m.StopSequence != nil) != (c.r == llm.FinishStopSequence) || (m.StopSequence != nil && *m.StopSequence != "ZZ") {
			t.Errorf("%s: stop_sequence %v", c.in, m.StopSequence)
		}
		var ch struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
		}
		b, _ = chat.EncodeResponse(resp, "m")
		_ = json.Unmarshal(b, &ch)
		if ch.Choices[0].FinishReason != c.chat {
			t.Errorf("%s → chat %s, want %s", c.in, ch.Choices[0].FinishReason, c.chat)
		}
	}
	// chat finish reasons come back as Anthropic stop reasons
	for in, want := range map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"} {
		resp, _ := chat.DecodeResponse([]byte(`{"choices":[{"message":{"content":"x"},"finish_reason":"` + in + `"}]}`))
		b, _ := EncodeResponse(resp, "m")
		var m struct {
			StopReason string `json:"stop_reason"`
		}
		_ = json.Unmarshal(b, &m)
		if m.StopReason != want {
			t.Errorf("chat %s → %s, want %s", in, m.StopReason, want)
		}
	}
}

func TestEncodeResponse(t *testing.T) {
	// An OpenAI answer (cached tokens already excluded from InputTokens)
	// rendered for a messages client.
	resp, err := chat.DecodeResponse([]byte(`{"id":"chatcmpl-1","model":"gpt","choices":[{"message":{"content":null,"tool_calls":[
		{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"cut"}}]},
		"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":60}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeResponse(resp, "alias")
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, b, `{"id":"msg_chatcmpl-1","type":"message","role":"assistant","model":"alias","content":[
		{"type":"tool_use","id":"c1","name":"f","input":{"a":1}},{"type":"tool_use","id":"c2","name":"g","input":{}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":40,"output_tokens":7,"cache_read_input_tokens":60,"cache_creation_input_tokens":0}}`)

	b, _ = EncodeResponse(&llm.Response{Content: []llm.Block{text(""), {Type: llm.BlockThinking, Text: "t", Signature: "s"}}}, "m")
	var v struct {
		ID      string
		Content []map[string]any
	}
	_ = json.Unmarshal(b, &v)
	if len(v.ID) < 20 || v.ID[:4] != "msg_" || len(v.Content) != 2 || v.Content[0]["text"] != "" || v.Content[1]["signature"] != "s" {
		t.Fatalf("%s", b)
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	var me *provider.MalformedError
	if _, err := DecodeResponse([]byte(`{"content":"x"`)); !errors.As(err, &me) {
		t.Fatalf("want MalformedError, got %v", err)
	}
	_, err := DecodeResponse([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.Type != "overloaded_error" || ue.Message != "Overloaded" {
		t.Fatalf("want UpstreamError, got %v", err)
	}
}
