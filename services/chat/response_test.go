package chat

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
)

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want llm.Response
	}{
		{
			name: "text with cached usage",
			body: `{"id":"chatcmpl-1","object":"chat.completion","created":5,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"prompt_tokens_details":{"cached_tokens":60}}}`,
			want: llm.Response{ID: "chatcmpl-1", Model: "gpt-4o", Created: 5, Content: []llm.Block{text("hi")}, FinishReason: llm.FinishStop,
				Usage: llm.Usage{InputTokens: 40, OutputTokens: 7, CacheReadTokens: 60}},
		},
		{
			name: "tool calls, null content, bad and empty arguments",
			body: `{"id":"x","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
				{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},
				{"id":"c2","type":"function","function":{"name":"g","arguments":""}},
				{"id":"c3","type":"function","function":{"name":"h","arguments":"{\"a\":"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
			want: llm.Response{ID: "x", FinishReason: llm.FinishToolUse, Usage: llm.Usage{InputTokens: 3, OutputTokens: 4}, Content: []llm.Block{
				{Type: llm.BlockToolUse, ToolCallID: "c1", ToolName: "f", ToolInput: json.RawMessage(`{"a":1}`)},
				{Type: llm.BlockToolUse, ToolCallID: "c2", ToolName: "g", ToolInput: json.RawMessage(`{}`)},
				{Type: llm.BlockToolUse, ToolCallID: "c3", ToolName: "h", ToolInput: json.RawMessage(`"{\"a\":"`)},
			}},
		},
		{"length", `{"choices":[{"message":{"content":"a"},"finish_reason":"length"}]}`,
			llm.Response{Content: []llm.Block{text("a")}, FinishReason: llm.FinishLength}},
		{"content_filter", `{"choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}`,
			llm.Response{Content: []llm.Block{text("")}, FinishReason: llm.FinishContentFilter}},
		{"function_call", `{"choices":[{"message":{"content":"a"},"finish_reason":"function_call"}]}`,
			llm.Response{Content: []llm.Block{text("a")}, FinishReason: llm.FinishToolUse}},
		{"reasoning and parts content", `{"choices":[{"message":{"reasoning_content":"think","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":null}]}`,
			llm.Response{Content: []llm.Block{{Type: llm.BlockThinking, Text: "think"}, text("ab")}, FinishReason: llm.FinishStop}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	var me *provider.MalformedError
	for _, body := range []string{`{`, `{"choices":[]}`, `{"choices":"x"}`, `{"choices":[{"message":{"content":5}}]}`} {
		if _, err := DecodeResponse([]byte(body)); !errors.As(err, &me) {
			t.Errorf("%s: want MalformedError, got %v", body, err)
		}
	}
	_, err := DecodeResponse([]byte(`{"error":{"message":"nope","type":"server_error"}}`))
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.Type != "server_error" || ue.Message != "nope" {
		t.Fatalf("want UpstreamError, got %v", err)
	}
}

func TestEncodeResponse(t *testing.T) {
	tests := []struct {
		name string
		resp llm.Response
		want string
	}{
		{
			name: "all text blocks concatenated, thinking dropped, usage with cache",
			resp: llm.Response{ID: "chatcmpl-9", Created: 7, Content: []llm.Block{{Type: llm.BlockThinking, Text: "t"}, text("a"), text("b")},
				FinishReason: llm.FinishStopSequence, Usage: llm.Usage{InputTokens: 10, OutputTokens: 3, CacheReadTokens: 5, CacheWriteTokens: 2}},
			want: `{"id":"chatcmpl-9","object":"chat.completion","created":7,"model":"alias","choices":[{"index":0,"message":{"role":"assistant","content":"ab","refusal":null},"logprobs":null,"finish_reason":"stop"}],
				"usage":{"prompt_tokens":17,"completion_tokens":3,"total_tokens":20,"prompt_tokens_details":{"cached_tokens":5}}}`,
		},
		{
			name: "tool calls only: content null, upstream id prefixed",
			resp: llm.Response{ID: "msg_1", Created: 7, FinishReason: llm.FinishToolUse, Content: []llm.Block{
				{Type: llm.BlockToolUse, ToolCallID: "toolu_1", ToolName: "f", ToolInput: json.RawMessage(`{"a":1}`)},
				{Type: llm.BlockToolUse, ToolCallID: "toolu_2", ToolName: "g", ToolInput: json.RawMessage(`"{\"a\":"`)}}},
			want: `{"id":"chatcmpl-msg_1","object":"chat.completion","created":7,"model":"alias","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,
				"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"toolu_2","type":"function","function":{"name":"g","arguments":"{\"a\":"}}]},
				"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EncodeResponse(&tt.resp, "alias")
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, tt.want)
		})
	}
	for _, c := range []struct {
		r    llm.FinishReason
		want string
	}{{llm.FinishStop, "stop"}, {llm.FinishStopSequence, "stop"}, {llm.FinishPauseTurn, "stop"}, {llm.FinishLength, "length"},
		{llm.FinishToolUse, "tool_calls"}, {llm.FinishContentFilter, "content_filter"}} {
		b, _ := EncodeResponse(&llm.Response{FinishReason: c.r}, "m")
		if !strings.Contains(string(b), `"finish_reason":"`+c.want+`"`) {
			t.Errorf("%s: %s", c.r, b)
		}
	}
	b, _ := EncodeResponse(&llm.Response{}, "m")
	var v struct {
		ID      string
		Created int64
	}
	_ = json.Unmarshal(b, &v)
	if !strings.HasPrefix(v.ID, "chatcmpl-") || len(v.ID) < 20 || v.Created == 0 {
		t.Fatalf("generated id/created: %s", b)
	}
}
