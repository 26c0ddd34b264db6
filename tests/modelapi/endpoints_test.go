package modelapi_test

import (
	"strings"
	"testing"

	"github.com/llmgw/gateway/mockupstream"
)

// The prompt every endpoint case sends: system "be brief" (2 words) and user
// "say hi please" (3 words), so the mock counts 5 input tokens; it answers
// "Hello from <upstream model>" (3 output tokens).
const (
	wantIn  = 5
	wantOut = 3
)

func chatBody(model string, stream bool) map[string]any {
	b := map[string]any{
		"model": model,
		"messages": []any{
			map[string]any{"role": "system", "content": "be brief"},
			map[string]any{"role": "user", "content": "say hi please"},
		},
		"max_tokens":  50,
		"temperature": 0.5,
		"stop":        []any{"END"},
	}
	if stream {
		b["stream"] = true
	}
	return b
}

func messagesBody(model string, stream bool) map[string]any {
	b := map[string]any{
		"model":          model,
		"system":         "be brief",
		"messages":       []any{map[string]any{"role": "user", "content": "say hi please"}},
		"max_tokens":     50,
		"temperature":    0.5,
		"stop_sequences": []any{"END"},
	}
	if stream {
		b["stream"] = true
	}
	return b
}

func responsesBody(model string) map[string]any {
	return map[string]any{
		"model": model, "instructions": "be brief", "input": "say hi please",
		"max_output_tokens": 50, "temperature": 0.5,
	}
}

var providerTypes = []struct{ name, typ string }{
	{"oai", "openai"}, {"ant", "anthropic"}, {"az", "azure"},
}

func testEndpoints(t *testing.T, s *suite) {
	for _, ep := range []string{"chat", "messages", "responses"} {
		for _, p := range providerTypes {
			for _, stream := range []bool{false, true} {
				if stream && ep == "responses" {
					continue
				}
				name := ep + "/" + p.typ
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					upModel := "ep-" + ep + "-" + p.typ
					if stream {
						upModel += "-s"
					}
					model := p.name + ":" + upModel
					var (
						path string
						body map[string]any
					)
					switch ep {
					case "chat":
						path, body = "/v1/chat/completions", chatBody(model, stream)
					case "messages":
						path, body = "/v1/messages", messagesBody(model, stream)
					default:
						path, body = "/v1/responses", responsesBody(model)
					}
					resp, raw := s.call(path, body)
					wantStatus(t, resp, raw, 200)
					if got := resp.Header.Get("X-Gateway-Provider"); got != p.name {
						t.Errorf("X-Gateway-Provider %q, want %q", got, p.name)
					}
					if got := resp.Header.Get("X-Gateway-Model"); got != upModel {
						t.Errorf("X-Gateway-Model %q, want %q", got, upModel)
					}
					if resp.Header.Get("X-Request-ID") == "" {
						t.Errorf("no X-Request-ID")
					}
					wantText := "Hello from " + upModel
					switch {
					case stream && ep == "chat":
						checkChatStream(t, resp, raw, model, wantText, false)
					case stream:
						checkMessagesStream(t, resp, raw, model, wantText)
					case ep == "chat":
						checkChatResponse(t, obj(t, raw), model, wantText)
					case ep == "messages":
						checkMessagesResponse(t, obj(t, raw), model, wantText)
					default:
						checkResponsesResponse(t, obj(t, raw), model, wantText)
					}
					checkUpstreamRequest(t, s.up.one(t, upModel), p.typ, ep, stream)
				})
			}
		}
	}
}

func checkChatResponse(t *testing.T, m map[string]any, model, text string) {
	t.Helper()
	if str(m["id"]) == "" || m["object"] != "chat.completion" || num(m["created"]) <= 0 {
		t.Errorf("id/object/created wrong: %v", m)
	}
	if m["model"] != model {
		t.Errorf("model %v, want %q", m["model"], model)
	}
	if r := path(m, "choices", 0, "message", "role"); r != "assistant" {
		t.Errorf("role %v", r)
	}
	if c := path(m, "choices", 0, "message", "content"); c != text {
		t.Errorf("content %v, want %q", c, text)
	}
	if f := path(m, "choices", 0, "finish_reason"); f != "stop" {
		t.Errorf("finish_reason %v", f)
	}
	u := path(m, "usage")
	if num(path(u, "prompt_tokens")) != wantIn || num(path(u, "completion_tokens")) != wantOut || num(path(u, "total_tokens")) != wantIn+wantOut {
		t.Errorf("usage %v, want %d/%d/%d", u, wantIn, wantOut, wantIn+wantOut)
	}
}

func checkMessagesResponse(t *testing.T, m map[string]any, model, text string) {
	t.Helper()
	if str(m["id"]) == "" || m["type"] != "message" || m["role"] != "assistant" {
		t.Errorf("id/type/role wrong: %v", m)
	}
	if m["model"] != model {
		t.Errorf("model %v, want %q", m["model"], model)
	}
	if path(m, "content", 0, "type") != "text" || path(m, "content", 0, "text") != text {
		t.Errorf("content %v, want text %q", m["content"], text)
	}
	if m["stop_reason"] != "end_turn" {
		t.Errorf("stop_reason %v", m["stop_reason"])
	}
	if num(path(m, "usage", "input_tokens")) != wantIn || num(path(m, "usage", "output_tokens")) != wantOut {
		t.Errorf("usage %v", m["usage"])
	}
}

func checkResponsesResponse(t *testing.T, m map[string]any, model, text string) {
	t.Helper()
	if str(m["id"]) == "" || m["object"] != "response" {
		t.Errorf("id/object wrong: %v", m)
	}
	if m["model"] != model {
		t.Errorf("model %v, want %q", m["model"], model)
	}
	if m["output"] != text {
		t.Errorf("output %v, want %q", m["output"], text)
	}
	u, ok := m["usage"].(map[string]any)
	if !ok {
		t.Fatalf("no usage: %v", m)
	}
	in, out := num(u["input_tokens"]), num(u["output_tokens"])
	if in == 0 {
		in = num(u["prompt_tokens"])
	}
	if out == 0 {
		out = num(u["completion_tokens"])
	}
	if in != wantIn || out != wantOut {
		t.Errorf("usage %v, want %d in / %d out", u, wantIn, wantOut)
	}
}

// checkUpstreamRequest checks the path, credentials, version headers and the
// translated body the upstream received.
func checkUpstreamRequest(t *testing.T, r mockupstream.Request, typ, ep string, stream bool) {
	t.Helper()
	b := r.JSON()
	if b == nil {
		t.Fatalf("upstream body not JSON: %s", r.Body)
	}
	for name, vals := range r.Header {
		for _, v := range vals {
			if strings.Contains(v, "sk-gw-") || strings.Contains(v, "sk-admin") {
				t.Errorf("client credential leaked upstream in %s: %q", name, v)
			}
		}
	}
	switch typ {
	case "openai":
		if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-up" {
			t.Errorf("openai path %q auth %q", r.Path, r.Header.Get("Authorization"))
		}
	case "azure":
		if r.Path != "/openai/deployments/"+r.Model+"/chat/completions" || !strings.Contains(r.Query, "api-version=2024-10-21") {
			t.Errorf("azure path %q query %q", r.Path, r.Query)
		}
		if r.Header.Get("api-key") != "sk-up" || r.Header.Get("Authorization") != "" {
			t.Errorf("azure auth: api-key %q Authorization %q", r.Header.Get("api-key"), r.Header.Get("Authorization"))
		}
	case "anthropic":
		if r.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-up" || r.Header.Get("anthropic-version") != "2023-06-01" {
			t.Errorf("anthropic path %q x-api-key %q version %q", r.Path, r.Header.Get("x-api-key"), r.Header.Get("anthropic-version"))
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("anthropic upstream got Authorization %q", r.Header.Get("Authorization"))
		}
	}
	if b["temperature"] != 0.5 {
		t.Errorf("temperature %v, want 0.5", b["temperature"])
	}
	if stream != (b["stream"] == true) {
		t.Errorf("upstream stream %v, want %v", b["stream"], stream)
	}
	msgs, _ := b["messages"].([]any)
	if typ == "anthropic" {
		if textOf(b["system"]) != "be brief" {
			t.Errorf("anthropic system %v", b["system"])
		}
		if num(b["max_tokens"]) != 50 {
			t.Errorf("anthropic max_tokens %v", b["max_tokens"])
		}
		if len(msgs) != 1 || path(msgs, 0, "role") != "user" || textOf(path(msgs, 0, "content")) != "say hi please" {
			t.Errorf("anthropic messages %v", msgs)
		}
		if ep != "responses" {
			jsonEq(t, b["stop_sequences"], `["END"]`)
		}
		if _, ok := b["stop"]; ok {
			t.Errorf("anthropic body has stop")
		}
		return
	}
	if len(msgs) != 2 || path(msgs, 0, "role") != "system" || textOf(path(msgs, 0, "content")) != "be brief" ||
		path(msgs, 1, "role") != "user" || textOf(path(msgs, 1, "content")) != "say hi please" {
		t.Errorf("openai messages %v", msgs)
	}
	mt := b["max_tokens"]
	if mt == nil {
		mt = b["max_completion_tokens"]
	}
	if num(mt) != 50 {
		t.Errorf("openai max_tokens %v", mt)
	}
	if ep != "responses" {
		stop := b["stop"]
		if s, ok := stop.(string); ok {
			stop = []any{s}
		}
		jsonEq(t, stop, `["END"]`)
	}
	if _, ok := b["stop_sequences"]; ok {
		t.Errorf("openai body has stop_sequences")
	}
	if stream && path(b, "stream_options", "include_usage") != true {
		t.Errorf("stream_options.include_usage not sent upstream: %v", b["stream_options"])
	}
}
