package modelapi_test

import (
	"testing"
)

// testTranslation covers the parameter mappings beyond the endpoint matrix.
func testTranslation(t *testing.T, s *suite) {
	t.Run("chat_to_anthropic_params", func(t *testing.T) {
		t.Parallel()
		up := "tx-c2a"
		body := map[string]any{
			"model": "ant:" + up,
			"messages": []any{
				map[string]any{"role": "system", "content": "be brief"},
				map[string]any{"role": "developer", "content": "use english"},
				map[string]any{"role": "user", "content": "say hi please"},
			},
			"stop": "END", "top_p": 0.9, "user": "u-42",
		}
		resp, raw := s.call("/v1/chat/completions", body)
		wantStatus(t, resp, raw, 200)
		b := s.up.one(t, up).JSON()
		sys := textOf(b["system"])
		if sys != "be brief\nuse english" && sys != "be brief use english" && sys != "be brief\n\nuse english" {
			t.Errorf("system %q, want both system and developer joined", sys)
		}
		if msgs, _ := b["messages"].([]any); len(msgs) != 1 {
			t.Errorf("messages %v", msgs)
		}
		jsonEq(t, b["stop_sequences"], `["END"]`)
		if b["top_p"] != 0.9 || path(b, "metadata", "user_id") != "u-42" {
			t.Errorf("top_p %v metadata %v", b["top_p"], b["metadata"])
		}
		if num(b["max_tokens"]) < 1 {
			t.Errorf("no max_tokens sent to anthropic though the client gave none: %v", b["max_tokens"])
		}
		if path(obj(t, raw), "usage", "prompt_tokens") != float64(7) {
			t.Errorf("usage %v", obj(t, raw)["usage"])
		}
	})

	t.Run("messages_to_openai_params", func(t *testing.T) {
		t.Parallel()
		up := "tx-m2o"
		body := map[string]any{
			"model": "oai:" + up, "max_tokens": 40,
			"system":   []any{map[string]any{"type": "text", "text": "be brief"}},
			"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "say hi please"}}}},
			"top_p":    0.8, "metadata": map[string]any{"user_id": "u-7"},
		}
		resp, raw := s.call("/v1/messages", body)
		wantStatus(t, resp, raw, 200)
		b := s.up.one(t, up).JSON()
		msgs, _ := b["messages"].([]any)
		if len(msgs) != 2 || path(msgs, 0, "role") != "system" || textOf(path(msgs, 0, "content")) != "be brief" || textOf(path(msgs, 1, "content")) != "say hi please" {
			t.Errorf("messages %v", msgs)
		}
		if b["top_p"] != 0.8 || b["user"] != "u-7" {
			t.Errorf("top_p %v user %v", b["top_p"], b["user"])
		}
		if _, ok := b["metadata"]; ok {
			t.Errorf("anthropic metadata sent to openai: %v", b["metadata"])
		}
	})

	t.Run("max_completion_tokens_to_anthropic", func(t *testing.T) {
		t.Parallel()
		b := chatBody("ant:tx-mct", false)
		delete(b, "max_tokens")
		b["max_completion_tokens"] = 33
		resp, raw := s.call("/v1/chat/completions", b)
		wantStatus(t, resp, raw, 200)
		if mt := s.up.one(t, "tx-mct").JSON()["max_tokens"]; num(mt) != 33 {
			t.Errorf("anthropic max_tokens %v, want 33", mt)
		}
	})

	t.Run("anthropic_passthrough", func(t *testing.T) {
		t.Parallel()
		up := "tx-apass"
		body := messagesBody("ant:"+up, false)
		body["top_k"] = 5
		body["metadata"] = map[string]any{"user_id": "u-1"}
		resp, raw := s.call("/v1/messages", body)
		wantStatus(t, resp, raw, 200)
		b := s.up.one(t, up).JSON()
		if b["top_k"] != float64(5) || path(b, "metadata", "user_id") != "u-1" || b["model"] != up {
			t.Errorf("upstream body %s", s.up.one(t, up).Body)
		}
		jsonEq(t, b["stop_sequences"], `["END"]`)
	})

	t.Run("same_format_passthrough", func(t *testing.T) {
		t.Parallel()
		up := "tx-pass"
		body := chatBody("oai:"+up, false)
		body["seed"] = 7
		body["presence_penalty"] = 0.25
		body["response_format"] = map[string]any{"type": "json_object"}
		body["n"] = 1
		resp, raw := s.call("/v1/chat/completions", body)
		wantStatus(t, resp, raw, 200)
		b := s.up.one(t, up).JSON()
		if b["seed"] != float64(7) || b["presence_penalty"] != 0.25 || path(b, "response_format", "type") != "json_object" || b["n"] != float64(1) {
			t.Errorf("uninterpreted parameters lost: %s", s.up.one(t, up).Body)
		}
		if b["model"] != up {
			t.Errorf("upstream model %v, want %q", b["model"], up)
		}
	})

	// Length cut maps both ways: anthropic max_tokens → finish_reason
	// length; openai length → stop_reason max_tokens.
	t.Run("length", func(t *testing.T) {
		t.Parallel()
		b := chatBody("ant:len-a", false)
		b["max_tokens"] = 2
		resp, raw := s.call("/v1/chat/completions", b)
		wantStatus(t, resp, raw, 200)
		m := obj(t, raw)
		if path(m, "choices", 0, "finish_reason") != "length" || path(m, "choices", 0, "message", "content") != "Hello from" {
			t.Errorf("chat from anthropic cut: %s", raw)
		}
		mb := messagesBody("oai:len-o", false)
		mb["max_tokens"] = 2
		resp, raw = s.call("/v1/messages", mb)
		wantStatus(t, resp, raw, 200)
		if m := obj(t, raw); m["stop_reason"] != "max_tokens" || num(path(m, "usage", "output_tokens")) != 2 {
			t.Errorf("messages from openai cut: %s", raw)
		}
	})

	t.Run("length_streams", func(t *testing.T) {
		t.Parallel()
		b := chatBody("ant:lens-a", true)
		b["max_tokens"] = 2
		resp, raw := s.call("/v1/chat/completions", b)
		wantStatus(t, resp, raw, 200)
		finish := ""
		for _, c := range checkChatStream(t, resp, raw, "ant:lens-a", "", false) {
			if f := str(path(c, "choices", 0, "finish_reason")); f != "" {
				finish = f
			}
		}
		if finish != "length" {
			t.Errorf("chat stream from anthropic cut: finish_reason %q", finish)
		}
		mb := messagesBody("oai:lens-o", true)
		mb["max_tokens"] = 2
		resp, raw = s.call("/v1/messages", mb)
		wantStatus(t, resp, raw, 200)
		stop := ""
		for _, e := range checkMessagesStream(t, resp, raw, "oai:lens-o", "") {
			if e.event == "message_delta" {
				stop = str(path(e.json(t), "delta", "stop_reason"))
			}
		}
		if stop != "max_tokens" {
			t.Errorf("messages stream from openai cut: stop_reason %q", stop)
		}
	})

	t.Run("chat_content_parts_to_anthropic", func(t *testing.T) {
		t.Parallel()
		up := "tx-parts"
		body := map[string]any{"model": "ant:" + up, "max_tokens": 20, "messages": []any{
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "first part"},
				map[string]any{"type": "text", "text": "second part"},
			}},
		}}
		resp, raw := s.call("/v1/chat/completions", body)
		wantStatus(t, resp, raw, 200)
		msgs, _ := s.up.one(t, up).JSON()["messages"].([]any)
		if len(msgs) != 1 || textOf(path(msgs, 0, "content")) != "first part second part" {
			t.Errorf("upstream messages %v", msgs)
		}
		if num(path(obj(t, raw), "usage", "prompt_tokens")) != 4 {
			t.Errorf("usage %v", obj(t, raw)["usage"])
		}
	})

	t.Run("responses_input_array", func(t *testing.T) {
		t.Parallel()
		up := "tx-resp"
		body := map[string]any{
			"model": "ant:" + up, "instructions": "be brief",
			"input": []any{
				map[string]any{"role": "user", "content": "hello there"},
				map[string]any{"role": "assistant", "content": "hi"},
				map[string]any{"role": "user", "content": "say hi please"},
			},
		}
		resp, raw := s.call("/v1/responses", body)
		wantStatus(t, resp, raw, 200)
		b := s.up.one(t, up).JSON()
		msgs, _ := b["messages"].([]any)
		if len(msgs) != 3 || textOf(b["system"]) != "be brief" || path(msgs, 1, "role") != "assistant" {
			t.Errorf("upstream %s", s.up.one(t, up).Body)
		}
		if m := obj(t, raw); m["output"] != "Hello from "+up || num(path(m, "usage", "input_tokens")) != 8 {
			t.Errorf("response %s", raw)
		}
	})
}
