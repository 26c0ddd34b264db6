package responses

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

func text(s string) []llm.Block { return []llm.Block{{Type: llm.BlockText, Text: s}} }

func fe(field, reason string) apierr.FieldError {
	return apierr.FieldError{Field: field, Reason: reason}
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want llm.Request
	}{
		{"string input with instructions", `{"model":"m","input":"hi","instructions":"be brief","temperature":1.5,"max_output_tokens":20,"top_p":0.5,"stream":false,"store":false}`,
			llm.Request{Model: "m", Format: llm.FormatResponses, System: "be brief", Temperature: ptr(1.5), TopP: ptr(0.5), MaxTokens: ptr(20),
				Messages: []llm.Message{{Role: llm.RoleUser, Content: text("hi")}}, Extra: map[string]json.RawMessage{"store": json.RawMessage(`false`)}}},
		{"array input, system items joined after instructions", `{"model":"m","instructions":"i","input":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"r"}]},{"role":"developer","content":"d"},{"role":"user","content":"q"}]}`,
			llm.Request{Model: "m", Format: llm.FormatResponses, System: "i\n\ns\n\nd", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: text("a\nb")}, {Role: llm.RoleAssistant, Content: text("r")}, {Role: llm.RoleUser, Content: text("q")}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
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
		{"bad json", `{"model":`, "Request body is not valid JSON.", nil},
		{"array body", `[]`, "Request body must be a JSON object.", nil},
		{"missing", `{}`, "", []apierr.FieldError{fe("model", "is required"), fe("input", "is required")}},
		{"stream", `{"model":"m","input":"x","stream":true}`, "Invalid request: stream is not supported on /v1/responses.", []apierr.FieldError{fe("stream", "is not supported on /v1/responses")}},
		{"types and ranges", `{"model":3,"input":5,"instructions":1,"temperature":3,"max_output_tokens":0,"top_p":"x"}`, "",
			[]apierr.FieldError{fe("model", "must be a string"), fe("instructions", "must be a string"), fe("input", "must be a string or an array of messages"),
				fe("temperature", "must be <= 2"), fe("top_p", "must be a number"), fe("max_output_tokens", "must be >= 1")}},
		{"items", `{"model":"m","input":[1,{"role":"tool","content":"x"},{"role":"user"},{"role":"user","content":[{"type":"input_image"}]},{"type":"function_call"}]}`, "",
			[]apierr.FieldError{fe("input[0]", "must be an object"), fe("input[1].role", "must be one of user, assistant, system, developer"),
				fe("input[2].content", "is required"), fe("input[3].content[0].type", "must be one of input_text, output_text, text"), fe("input[4].type", "must be message")}},
		{"null model", `{"model":null,"input":"x"}`, "Invalid request: model is required.", []apierr.FieldError{fe("model", "is required")}},
		{"empty model", `{"model":"","input":"x"}`, "Invalid request: model must not be empty.", []apierr.FieldError{fe("model", "must not be empty")}},
		{"empty input", `{"model":"m","input":""}`, "", []apierr.FieldError{fe("input", "must not be empty")}},
		{"empty array", `{"model":"m","input":[]}`, "", []apierr.FieldError{fe("input", "must not be empty")}},
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

func TestEncodeResponse(t *testing.T) {
	b, err := EncodeResponse(&llm.Response{ID: "chatcmpl-1", Created: 9, Content: []llm.Block{{Type: llm.BlockThinking, Text: "t"}, {Type: llm.BlockText, Text: "a"}, {Type: llm.BlockText, Text: "b"}},
		FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 10, OutputTokens: 4, CacheReadTokens: 6}}, "alias")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"resp_chatcmpl-1","object":"response","created":9,"model":"alias","output":"ab","status":"completed","usage":{"input_tokens":16,"output_tokens":4,"total_tokens":20}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	b, _ = EncodeResponse(&llm.Response{FinishReason: llm.FinishLength}, "m")
	var v struct {
		ID      string
		Created int64
		Status  string
	}
	_ = json.Unmarshal(b, &v)
	if !strings.HasPrefix(v.ID, "resp_") || len(v.ID) < 20 || v.Created == 0 || v.Status != "incomplete" {
		t.Fatalf("%s", b)
	}
}
