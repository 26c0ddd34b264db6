package messages

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/chat"
	"github.com/llmgw/gateway/services/llm"
)

func ptr[T any](v T) *T { return &v }

func text(s string) llm.Block { return llm.Block{Type: llm.BlockText, Text: s} }

func fe(field, reason string) apierr.FieldError {
	return apierr.FieldError{Field: field, Reason: reason}
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want llm.Request
	}{
		{
			name: "minimal",
			body: `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
			want: llm.Request{Model: "claude", MaxTokens: ptr(100), Format: llm.FormatMessages, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("hi")}}}},
		},
		{
			name: "system blocks, sampling, stop, metadata, stream, extras",
			body: `{"model":"c","max_tokens":5,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b"}],
				"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"r"}]},{"role":"user","content":"q2"}],
				"temperature":0.7,"top_p":0.5,"top_k":40,"stop_sequences":["END"],"metadata":{"user_id":"u9"},"stream":true,
				"thinking":{"type":"enabled","budget_tokens":1024},"service_tier":"auto"}`,
			want: llm.Request{Model: "c", MaxTokens: ptr(5), System: "a\n\nb", Format: llm.FormatMessages, Temperature: ptr(0.7), TopP: ptr(0.5), TopK: ptr(40),
				Stop: []string{"END"}, User: "u9", Stream: true,
				Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("q")}}, {Role: llm.RoleAssistant, Content: []llm.Block{text("r")}},
					{Role: llm.RoleUser, Content: []llm.Block{text("q2")}}},
				Extra: map[string]json.RawMessage{"thinking": json.RawMessage(`{"type":"enabled","budget_tokens":1024}`), "service_tier": json.RawMessage(`"auto"`)}},
		},
		{
			name: "tools, tool use, tool results, thinking, images, tool_choice tool without parallel",
			body: `{"model":"c","max_tokens":5,"messages":[
				{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"image","source":{"type":"url","url":"https://i"}}]},
				{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xx"},{"type":"text","text":"calling"},
					{"type":"tool_use","id":"t1","name":"get","input":{"city":"Paris"}},{"type":"tool_use","id":"t2","name":"get","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sunny"},
					{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":[{"type":"text","text":"boom"}]},{"type":"text","text":"so?"}]}],
				"tools":[{"name":"get","description":"weather","input_schema":{"type":"object"}}],
				"tool_choice":{"type":"tool","name":"get","disable_parallel_tool_use":true}}`,
			want: llm.Request{Model: "c", MaxTokens: ptr(5), Format: llm.FormatMessages,
				Tools:      []llm.Tool{{Name: "get", Description: "weather", Parameters: json.RawMessage(`{"type":"object"}`)}},
				ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get"}, ParallelToolCalls: ptr(false),
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: []llm.Block{text("see"), {Type: llm.BlockImage, MediaType: "image/png", ImageData: "AAAA"}, {Type: llm.BlockImage, ImageURL: "https://i"}}},
					{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Text: "hm", Signature: "sig"}, text("calling"),
						{Type: llm.BlockToolUse, ToolCallID: "t1", ToolName: "get", ToolInput: json.RawMessage(`{"city":"Paris"}`)},
						{Type: llm.BlockToolUse, ToolCallID: "t2", ToolName: "get", ToolInput: json.RawMessage(`{}`)}}},
					{Role: llm.RoleUser, Content: []llm.Block{
						{Type: llm.BlockToolResult, ToolCallID: "t1", Content: []llm.Block{text("sunny")}},
						{Type: llm.BlockToolResult, ToolCallID: "t2", IsError: true, Content: []llm.Block{text("boom")}}, text("so?")}},
				}},
		},
		{
			name: "tool_choice auto any none",
			body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"any"}}`,
			want: llm.Request{Model: "c", MaxTokens: ptr(5), Format: llm.FormatMessages, ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceRequired},
				Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("x")}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
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
		{"not json", `{"model"`, "Request body is not valid JSON.", nil},
		{"not object", `"x"`, "Request body must be a JSON object.", nil},
		{"missing", `{}`, "Invalid request: model is required (and 2 more invalid fields).", []apierr.FieldError{fe("model", "is required"), fe("max_tokens", "is required"), fe("messages", "is required")}},
		{"ranges and types", `{"model":"c","max_tokens":0,"messages":[],"temperature":1.5,"top_p":-1,"top_k":1.5,"stream":1,"stop_sequences":"x","system":5,"metadata":{"user_id":3}}`, "",
			[]apierr.FieldError{fe("max_tokens", "must be >= 1"), fe("messages", "must not be empty"), fe("system", "must be a string or an array of text blocks"),
				fe("temperature", "must be <= 1"), fe("top_p", "must be >= 0"), fe("top_k", "must be an integer"),
				fe("stop_sequences", "must be an array of strings"), fe("stream", "must be a boolean"), fe("metadata.user_id", "must be a string")}},
		{"messages", `{"model":"c","max_tokens":1,"messages":[{"role":"system","content":"x"},{"role":"user"},7,{"role":"user","content":[{"type":"document"},{"type":"image","source":{"type":"file"}},{"type":"tool_use","id":"t","name":"f","input":[]},{"type":"tool_result","content":[{"type":"tool_use"}]},{"text":"x"}]}]}`, "",
			[]apierr.FieldError{fe("messages[0].role", "must be one of user, assistant"), fe("messages[1].content", "is required"), fe("messages[2]", "must be an object"),
				fe("messages[3].content[0].type", "must be one of text, image, tool_use, tool_result, thinking"), fe("messages[3].content[1].source.type", "must be one of base64, url"),
				fe("messages[3].content[2].input", "must be an object"), fe("messages[3].content[3].tool_use_id", "must be a non-empty string"),
				fe("messages[3].content[3].content[0].type", "must be one of text, image"), fe("messages[3].content[4].type", "is required")}},
		{"tools and tool_choice", `{"model":"c","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"a"},{"type":"web_search_20250305","name":"w"},{"name":"","input_schema":{}}],"tool_choice":{"type":"tool"}}`, "",
			[]apierr.FieldError{fe("tools[0].input_schema", "is required"), fe("tools[1].type", "must be custom"), fe("tools[2].name", "must be a non-empty string"),
				fe("tool_choice.name", "must be a non-empty string")}},
		{"tool_choice type", `{"model":"c","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tool_choice":"auto"}`, "",
			[]apierr.FieldError{fe("tool_choice", "must be an object")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.body))
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 400 || e.Type != apierr.TypeInvalidRequest {
				t.Fatalf("want 400 invalid_request_error, got %v", err)
			}
			if tt.msg != "" && e.Message != tt.msg {
				t.Fatalf("message %q want %q", e.Message, tt.msg)
			}
			var got []apierr.FieldError
			if e.Details != nil {
				got, _ = e.Details["fields"].([]apierr.FieldError)
			}
			if !reflect.DeepEqual(got, tt.fields) {
				t.Fatalf("fields\n got %v\nwant %v", got, tt.fields)
			}
		})
	}
}

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
		name string
		req  llm.Request
		want string
	}{
		{
			name: "defaults: max_tokens 4096, temperature clamped, user to metadata, no extra from chat",
			req: llm.Request{Format: llm.FormatChat, Temperature: ptr(1.8), TopK: ptr(3), User: "u", Stop: []string{"s"}, Stream: true,
				Extra:    map[string]json.RawMessage{"seed": json.RawMessage(`1`)},
				Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("hi")}}}},
			want: `{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"temperature":1,"top_k":3,
				"stop_sequences":["s"],"metadata":{"user_id":"u"},"stream":true}`,
		},
		{
			name: "extra forwarded for messages clients, owned keys skipped",
			req: llm.Request{Format: llm.FormatMessages, MaxTokens: ptr(9), System: "sys",
				Extra:    map[string]json.RawMessage{"thinking": json.RawMessage(`{"type":"enabled","budget_tokens":2000}`), "max_tokens": json.RawMessage(`1`)},
				Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{text("hi")}}}},
			want: `{"model":"claude-x","max_tokens":9,"system":"sys","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"thinking":{"type":"enabled","budget_tokens":2000}}`,
		},
		{
			name: "parallel_tool_calls false without tool_choice, tool order, merging, images, bad input",
			req: llm.Request{Format: llm.FormatChat, ParallelToolCalls: ptr(false),
				Tools: []llm.Tool{{Name: "get"}},
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: []llm.Block{text("look"), {Type: llm.BlockImage, ImageURL: "data:image/jpeg;base64,/9j/"}, {Type: llm.BlockImage, ImageURL: "https://i"}}},
					{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ToolCallID: "c1", ToolName: "get", ToolInput: json.RawMessage(`{"a":1}`)},
						text("text after call"), {Type: llm.BlockThinking, Text: "unsigned"}, {Type: llm.BlockToolUse, ToolCallID: "c2", ToolName: "get", ToolInput: json.RawMessage(`"{bad"`)}}},
					{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolCallID: "c1", Content: []llm.Block{text("r1")}},
						{Type: llm.BlockToolResult, ToolCallID: "c2", IsError: true}}},
					{Role: llm.RoleUser, Content: []llm.Block{text("next")}},
					{Role: llm.RoleAssistant, Content: []llm.Block{text("")}},
					{Role: llm.RoleUser, Content: []llm.Block{text("again"), {Type: llm.BlockToolResult, ToolCallID: "c3", Content: []llm.Block{text("a"), text("b")}}}},
				}},
			want: `{"model":"claude-x","max_tokens":4096,"messages":[
				{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}},{"type":"image","source":{"type":"url","url":"https://i"}}]},
				{"role":"assistant","content":[{"type":"text","text":"text after call"},{"type":"tool_use","id":"c1","name":"get","input":{"a":1}},{"type":"tool_use","id":"c2","name":"get","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"r1"},{"type":"tool_result","tool_use_id":"c2","is_error":true},
					{"type":"tool_result","tool_use_id":"c3","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"type":"text","text":"next"},{"type":"text","text":"again"}]}],
				"tools":[{"name":"get","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EncodeRequest(&tt.req, "claude-x")
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, tt.want)
		})
	}
}

// chat ⇄ messages through the canonical form: every mapped field, both ways.
func TestChatToMessagesRequest(t *testing.T) {
	chatBody := `{"model":"alias","messages":[
		{"role":"system","content":"s1"},{"role":"developer","content":"s2"},
		{"role":"user","content":"weather in Paris and Rome?"},
		{"role":"assistant","content":"checking","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"c2","type":"function","function":{"name":"get","arguments":""}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"},
		{"role":"tool","tool_call_id":"c2","content":"rain"},
		{"role":"user","content":"thanks"}],
		"temperature":0.3,"top_p":0.8,"max_tokens":50,"stop":["X"],"user":"u1","stream":true,
		"tools":[{"type":"function","function":{"name":"get","description":"d","parameters":{"type":"object"}}}],
		"tool_choice":"required","parallel_tool_calls":false,"seed":7}`
	req, err := chat.DecodeRequest([]byte(chatBody))
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeRequest(req, "claude-x")
	if err != nil {
		t.Fatal(err)
	}
	wantMessages := `{"model":"claude-x","max_tokens":50,"system":"s1\n\ns2","messages":[
		{"role":"user","content":[{"type":"text","text":"weather in Paris and Rome?"}]},
		{"role":"assistant","content":[{"type":"text","text":"checking"},{"type":"tool_use","id":"c1","name":"get","input":{"city":"Paris"}},{"type":"tool_use","id":"c2","name":"get","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"sunny"},{"type":"tool_result","tool_use_id":"c2","content":"rain"},{"type":"text","text":"thanks"}]}],
		"temperature":0.3,"top_p":0.8,"stop_sequences":["X"],"tools":[{"name":"get","description":"d","input_schema":{"type":"object"}}],
		"tool_choice":{"type":"any","disable_parallel_tool_use":true},"metadata":{"user_id":"u1"},"stream":true}`
	jsonEqual(t, got, wantMessages)

	// And back: the Anthropic body as a client request, re-encoded for an
	// OpenAI upstream.
	mreq, err := DecodeRequest([]byte(strings.Replace(wantMessages, `"claude-x"`, `"alias"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	back, err := chat.EncodeRequest(mreq, "gpt-x")
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, back, `{"model":"gpt-x","messages":[
		{"role":"system","content":"s1\n\ns2"},
		{"role":"user","content":"weather in Paris and Rome?"},
		{"role":"assistant","content":"checking","tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"get","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"},{"role":"tool","tool_call_id":"c2","content":"rain"},
		{"role":"user","content":"thanks"}],
		"max_tokens":50,"temperature":0.3,"top_p":0.8,"stop":["X"],
		"tools":[{"type":"function","function":{"name":"get","description":"d","parameters":{"type":"object"}}}],
		"tool_choice":"required","parallel_tool_calls":false,"user":"u1","stream":true,"stream_options":{"include_usage":true}}`)
}

func TestToolChoiceMapping(t *testing.T) {
	for _, c := range []struct{ chat, messages string }{
		{`"auto"`, `{"type":"auto"}`}, {`"required"`, `{"type":"any"}`}, {`"none"`, `{"type":"none"}`},
		{`{"type":"function","function":{"name":"f"}}`, `{"type":"tool","name":"f"}`},
	} {
		req, err := chat.DecodeRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":` + c.chat + `}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := EncodeRequest(req, "c")
		var v struct {
			ToolChoice json.RawMessage `json:"tool_choice"`
		}
		_ = json.Unmarshal(b, &v)
		jsonEqual(t, v.ToolChoice, c.messages)
		mreq, err := DecodeRequest([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{}}],"tool_choice":` + c.messages + `}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ = chat.EncodeRequest(mreq, "c")
		_ = json.Unmarshal(b, &v)
		jsonEqual(t, v.ToolChoice, c.chat)
	}
}
