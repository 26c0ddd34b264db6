package chat

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/llm"
)

func ptr[T any](v T) *T { return &v }

func fe(field, reason string) apierr.FieldError {
	return apierr.FieldError{Field: field, Reason: reason}
}

func text(s string) llm.Block { return llm.Block{Type: llm.BlockText, Text: s} }

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want llm.Request
	}{
		{
			name: "minimal",
			body: `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`,
			want: llm.Request{Model: "gpt", Format: llm.FormatChat, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("hi")}}}},
		},
		{
			name: "system and developer hoisted and joined, multi-turn",
			body: `{"model":"m","messages":[{"role":"system","content":"a"},{"role":"developer","content":[{"type":"text","text":"b"}]},
				{"role":"user","content":"q1"},{"role":"assistant","content":"r1"},{"role":"user","content":"q2"}]}`,
			want: llm.Request{Model: "m", Format: llm.FormatChat, System: "a\n\nb", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: []llm.Block{text("q1")}},
				{Role: llm.RoleAssistant, Content: []llm.Block{text("r1")}},
				{Role: llm.RoleUser, Content: []llm.Block{text("q2")}},
			}},
		},
		{
			name: "sampling, stop string, stream with usage, user, parallel",
			body: `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":1.5,"top_p":0.9,"max_tokens":100,
				"stop":"END","stream":true,"stream_options":{"include_usage":true},"user":"u1","parallel_tool_calls":false}`,
			want: llm.Request{Model: "m", Format: llm.FormatChat, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("x")}}},
				Temperature: ptr(1.5), TopP: ptr(0.9), MaxTokens: ptr(100), Stop: []string{"END"}, Stream: true, IncludeUsage: true,
				User: "u1", ParallelToolCalls: ptr(false)},
		},
		{
			name: "stop array, max_completion_tokens wins and stays in extra, extras kept",
			body: `{"model":"m","messages":[{"role":"user","content":"x"}],"stop":["a","b"],"max_tokens":5,"max_completion_tokens":7,
				"seed":42,"presence_penalty":0.5,"response_format":{"type":"json_object"},"n":1,"logit_bias":{"50256":-100}}`,
			want: llm.Request{Model: "m", Format: llm.FormatChat, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("x")}}},
				Stop: []string{"a", "b"}, MaxTokens: ptr(7), Extra: map[string]json.RawMessage{
					"max_completion_tokens": json.RawMessage(`7`), "seed": json.RawMessage(`42`), "presence_penalty": json.RawMessage(`0.5`),
					"response_format": json.RawMessage(`{"type":"json_object"}`), "n": json.RawMessage(`1`), "logit_bias": json.RawMessage(`{"50256":-100}`)}},
		},
		{
			name: "include_usage ignored without stream",
			body: `{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`,
			want: llm.Request{Model: "m", Format: llm.FormatChat, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("x")}}}},
		},
		{
			name: "content parts with image",
			body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]}]}`,
			want: llm.Request{Model: "m", Format: llm.FormatChat, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
				text("what?"), {Type: llm.BlockImage, ImageURL: "https://x/y.png"}}}}},
		},
		{
			name: "tools, tool_choice function, tool calls and merged tool results",
			body: `{"model":"m","messages":[
				{"role":"user","content":"weather?"},
				{"role":"assistant","content":null,"tool_calls":[
					{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"city\":\"Paris\"}"}},
					{"id":"c2","type":"function","function":{"name":"get","arguments":""}}]},
				{"role":"tool","tool_call_id":"c1","content":"sunny"},
				{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"rain"}]},
				{"role":"user","content":"thanks"}],
				"tools":[{"type":"function","function":{"name":"get","description":"weather","parameters":{"type":"object"}}}],
				"tool_choice":{"type":"function","function":{"name":"get"}}}`,
			want: llm.Request{Model: "m", Format: llm.FormatChat,
				Tools:      []llm.Tool{{Name: "get", Description: "weather", Parameters: json.RawMessage(`{"type":"object"}`)}},
				ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get"},
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: []llm.Block{text("weather?")}},
					{Role: llm.RoleAssistant, Content: []llm.Block{
						{Type: llm.BlockToolUse, ToolCallID: "c1", ToolName: "get", ToolInput: json.RawMessage(`{"city":"Paris"}`)},
						{Type: llm.BlockToolUse, ToolCallID: "c2", ToolName: "get", ToolInput: json.RawMessage(`{}`)}}},
					{Role: llm.RoleUser, Content: []llm.Block{
						{Type: llm.BlockToolResult, ToolCallID: "c1", Content: []llm.Block{text("sunny")}},
						{Type: llm.BlockToolResult, ToolCallID: "c2", Content: []llm.Block{text("rain")}}}},
					{Role: llm.RoleUser, Content: []llm.Block{text("thanks")}},
				}},
		},
		{
			name: "assistant text and tool call",
			body: `{"model":"m","messages":[{"role":"assistant","content":"let me see","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}],"tool_choice":"required"}`,
			want: llm.Request{Model: "m", Format: llm.FormatChat, ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceRequired},
				Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{text("let me see"),
					{Type: llm.BlockToolUse, ToolCallID: "c1", ToolName: "f", ToolInput: json.RawMessage(`{}`)}}}}},
		},
		{
			name: "tool_choice auto and none",
			body: `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"none"}`,
			want: llm.Request{Model: "m", Format: llm.FormatChat, ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceNone},
				Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("x")}}}},
		},
		{
			name: "escaped strings and nulls",
			body: `{"model":"m\u0031","messages":[{"role":"user","content":"a\"b\n"}],"temperature":null,"stop":null,"tools":null}`,
			want: llm.Request{Model: "m1", Format: llm.FormatChat, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("a\"b\n")}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(tt.want, "", " ")
				t.Fatalf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		msg    string
		fields []apierr.FieldError
	}{
		{"not json", `{"model":`, "Request body is not valid JSON.", nil},
		{"trailing garbage", `{"model":"m"} x`, "Request body is not valid JSON.", nil},
		{"not an object", `[1,2]`, "Request body must be a JSON object.", nil},
		{"empty object", `{}`, "", []apierr.FieldError{fe("model", "is required"), fe("messages", "is required")}},
		{"wrong types everywhere", `{"model":5,"messages":"hi","temperature":"hot","max_tokens":1.5,"stream":"yes","top_p":2,"user":1,"parallel_tool_calls":"no"}`, "",
			[]apierr.FieldError{fe("model", "must be a string"), fe("messages", "must be an array"), fe("temperature", "must be a number"),
				fe("top_p", "must be <= 1"), fe("max_tokens", "must be an integer"), fe("stream", "must be a boolean"),
				fe("user", "must be a string"), fe("parallel_tool_calls", "must be a boolean")}},
		{"ranges", `{"model":"","messages":[],"temperature":2.5,"max_tokens":0,"max_completion_tokens":-1}`, "",
			[]apierr.FieldError{fe("model", "must not be empty"), fe("messages", "must not be empty"), fe("temperature", "must be <= 2"),
				fe("max_tokens", "must be >= 1"), fe("max_completion_tokens", "must be >= 1")}},
		{"negative temperature", `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":-0.1}`, "Invalid request: temperature must be >= 0.",
			[]apierr.FieldError{fe("temperature", "must be >= 0")}},
		{"message paths", `{"model":"m","messages":[{"role":"user","content":"ok"},{"role":"bot","content":"x"},"str",{"content":"x"},{"role":"user"},{"role":"user","content":5},{"role":"tool","content":"r"}]}`, "",
			[]apierr.FieldError{fe("messages[1].role", "must be one of system, user, assistant, tool, developer"), fe("messages[2]", "must be an object"),
				fe("messages[3].role", "is required"), fe("messages[4].content", "is required"),
				fe("messages[5].content", "must be a string or an array of content parts"), fe("messages[6].tool_call_id", "is required")}},
		{"content parts", `{"model":"m","messages":[{"role":"user","content":[{"type":"audio"},{"type":"image_url"},{"type":"image_url","image_url":{"url":""}},{"type":"text","text":3}]},{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}}]}]}`, "",
			[]apierr.FieldError{fe("messages[0].content[0].type", "must be one of text, image_url"), fe("messages[0].content[1].image_url", "is required"),
				fe("messages[0].content[2].image_url.url", "must be a non-empty string"), fe("messages[0].content[3].text", "must be a string"),
				fe("messages[1].content[0].type", "must be text")}},
		{"tool calls", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{bad"}},{"id":"c","function":"f"},{"id":"c","type":"x","function":{"arguments":"[1]"}}]}]}`, "",
			[]apierr.FieldError{fe("messages[0].tool_calls[0].id", "must be a non-empty string"), fe("messages[0].tool_calls[0].function.arguments", "must be a JSON object encoded as a string"),
				fe("messages[0].tool_calls[1].function", "must be an object"),
				fe("messages[0].tool_calls[2].type", "must be function"), fe("messages[0].tool_calls[2].function.name", "must be a non-empty string"),
				fe("messages[0].tool_calls[2].function.arguments", "must be a JSON object encoded as a string")}},
		{"tools and tool_choice and stop", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"},{"type":"function","function":{"name":"","parameters":[]}},{"type":"web"}],"tool_choice":"always","stop":[1],"stream_options":{"include_usage":1}}`, "",
			[]apierr.FieldError{fe("stream_options.include_usage", "must be a boolean"), fe("tools[0].function", "is required"),
				fe("tools[1].function.name", "must be a non-empty string"), fe("tools[1].function.parameters", "must be an object"),
				fe("tools[2].type", "must be function"), fe("tool_choice", "must be one of none, auto, required or a function object"),
				fe("stop", "must be a string or an array of strings")}},
		{"tools not array, tool_choice without name", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":{},"tool_choice":{"type":"function","function":{}}}`, "",
			[]apierr.FieldError{fe("tools", "must be an array"), fe("tool_choice.function.name", "must be a non-empty string")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.body))
			var e *apierr.Error
			if !errors.As(err, &e) {
				t.Fatalf("want *apierr.Error, got %v", err)
			}
			if e.Status != 400 || e.Type != apierr.TypeInvalidRequest {
				t.Fatalf("status %d type %s", e.Status, e.Type)
			}
			if tt.msg != "" && e.Message != tt.msg {
				t.Fatalf("message %q, want %q", e.Message, tt.msg)
			}
			var got []apierr.FieldError
			if e.Details != nil {
				got, _ = e.Details["fields"].([]apierr.FieldError)
			}
			if !reflect.DeepEqual(got, tt.fields) {
				t.Fatalf("fields\n got %v\nwant %v", got, tt.fields)
			}
			if !strings.HasSuffix(e.Message, ".") {
				t.Fatalf("message is not a sentence: %q", e.Message)
			}
		})
	}
}

// jsonEqual compares two JSON documents structurally.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestEncodeRequest(t *testing.T) {
	tests := []struct {
		name  string
		req   llm.Request
		model string
		want  string
	}{
		{
			name: "system first, sampling, stream always asks for usage",
			req: llm.Request{Model: "alias", System: "be brief", Format: llm.FormatMessages, Stream: true, MaxTokens: ptr(10), Temperature: ptr(0.5), TopP: ptr(0.9), TopK: ptr(5), Stop: []string{"x"}, User: "u",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("hi")}}}, Extra: map[string]json.RawMessage{"thinking": json.RawMessage(`{}`)}},
			model: "gpt-4o",
			want:  `{"model":"gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":10,"temperature":0.5,"top_p":0.9,"stop":["x"],"user":"u","stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "extra forwarded for chat clients, owned keys not duplicated, max_completion_tokens kept",
			req: llm.Request{Model: "a", Format: llm.FormatChat, MaxTokens: ptr(7), Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("hi")}}},
				Extra: map[string]json.RawMessage{"seed": json.RawMessage(`1`), "max_completion_tokens": json.RawMessage(`7`), "model": json.RawMessage(`"evil"`)}},
			model: "m",
			want:  `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7,"seed":1}`,
		},
		{
			name: "tools, tool calls, tool results, thinking dropped, images",
			req: llm.Request{Format: llm.FormatMessages, ParallelToolCalls: ptr(false),
				Tools:      []llm.Tool{{Name: "get", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
				ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get"},
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: []llm.Block{text("look"), {Type: llm.BlockImage, MediaType: "image/png", ImageData: "AAAA"}, {Type: llm.BlockImage, ImageURL: "https://i"}}},
					{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Text: "hmm", Signature: "s"},
						{Type: llm.BlockToolUse, ToolCallID: "c1", ToolName: "get", ToolInput: json.RawMessage(`{"a":1}`)},
						{Type: llm.BlockToolUse, ToolCallID: "c2", ToolName: "get"}}},
					{Role: llm.RoleUser, Content: []llm.Block{
						{Type: llm.BlockToolResult, ToolCallID: "c1", Content: []llm.Block{text("r1"), text("r1b")}},
						{Type: llm.BlockToolResult, ToolCallID: "c2", IsError: true, Content: []llm.Block{text("boom")}},
						text("and now?")}},
					{Role: llm.RoleAssistant, Content: []llm.Block{text("a"), text("b")}},
				}},
			model: "m",
			want: `{"model":"m","messages":[
				{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://i"}}]},
				{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"get","arguments":"{}"}}]},
				{"role":"tool","content":"r1\nr1b","tool_call_id":"c1"},
				{"role":"tool","content":"boom","tool_call_id":"c2"},
				{"role":"user","content":"and now?"},
				{"role":"assistant","content":"ab"}],
				"tools":[{"type":"function","function":{"name":"get","description":"d","parameters":{"type":"object"}}}],
				"tool_choice":{"type":"function","function":{"name":"get"}},"parallel_tool_calls":false}`,
		},
		{
			name: "tool_choice modes",
			req: llm.Request{Tools: []llm.Tool{{Name: "f"}}, ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceRequired},
				Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("x")}}}},
			model: "m",
			want:  `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`,
		},
		{
			name:  "translated tool_choice and parallel_tool_calls dropped without tools",
			req:   llm.Request{Format: llm.FormatMessages, ParallelToolCalls: ptr(false), ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceNone}, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("x")}}}},
			model: "m",
			want:  `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		},
		{
			name:  "a chat client's own tool_choice is forwarded even without tools",
			req:   llm.Request{Format: llm.FormatChat, ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceNone}, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("x")}}}},
			model: "m",
			want:  `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"none"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EncodeRequest(&tt.req, tt.model)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, tt.want)
		})
	}
}

// A chat body survives decode → encode with only model replaced.
func TestRequestRoundTrip(t *testing.T) {
	body := `{"model":"alias","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
		{"role":"tool","content":"r","tool_call_id":"c1"}],"temperature":0.2,"max_tokens":9,"stop":["z"],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto","seed":3,"response_format":{"type":"text"}}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeRequest(req, "gpt-x")
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, strings.Replace(body, `"alias"`, `"gpt-x"`, 1))
}

// The extras scanner must not be fooled by escaped quotes, backslashes or
// brackets inside strings, nor by escaped keys.
func TestExtrasScanner(t *testing.T) {
	body := `{ "model" : "m", "messages":[{"role":"user","content":"a\\\"}]b\\\\"}], "x\"y" : {"a":"}\\\\"} ,"z":[1,"]",{"q":[]}],"n":-1.5e3,"t":true,"m\u006fdel2":1}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]json.RawMessage{
		`x"y`: json.RawMessage(`{"a":"}\\\\"}`), "z": json.RawMessage(`[1,"]",{"q":[]}]`),
		"n": json.RawMessage(`-1.5e3`), "t": json.RawMessage(`true`), "model2": json.RawMessage(`1`),
	}
	if !reflect.DeepEqual(req.Extra, want) {
		t.Fatalf("extra %q", req.Extra)
	}
	if req.Messages[0].Content[0].Text != `a\"}]b\\` {
		t.Fatalf("content %q", req.Messages[0].Content[0].Text)
	}
}
