package modelapi_test

import (
	"testing"
)

func chatTools() []any {
	return []any{
		map[string]any{"type": "function", "function": map[string]any{
			"name": "get_weather", "description": "Weather for a place",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
		}},
		map[string]any{"type": "function", "function": map[string]any{
			"name": "get_time", "description": "Time in a zone",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"timezone": map[string]any{"type": "string"}}},
		}},
	}
}

func messagesTools() []any {
	return []any{
		map[string]any{"name": "get_weather", "description": "Weather for a place",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}}},
		map[string]any{"name": "get_time", "description": "Time in a zone",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"timezone": map[string]any{"type": "string"}}}},
	}
}

func testTools(t *testing.T, s *suite) {
	// chat client → anthropic upstream: tools, tool_choice and the response.
	choices := []struct {
		name     string
		chat     any
		parallel any
		want     string
	}{
		{"auto", "auto", nil, `{"type":"auto"}`},
		{"required", "required", nil, `{"type":"any"}`},
		{"none", "none", nil, `{"type":"none"}`},
		{"function", map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, nil, `{"type":"tool","name":"get_weather"}`},
		{"auto_no_parallel", "auto", false, `{"type":"auto","disable_parallel_tool_use":true}`},
	}
	for _, tc := range choices {
		t.Run("chat_to_anthropic/"+tc.name, func(t *testing.T) {
			t.Parallel()
			up := "tc-" + tc.name + "+tools"
			model := "ant:" + up
			body := chatBody(model, false)
			body["tools"] = chatTools()
			body["tool_choice"] = tc.chat
			if tc.parallel != nil {
				body["parallel_tool_calls"] = tc.parallel
			}
			resp, raw := s.call("/v1/chat/completions", body)
			wantStatus(t, resp, raw, 200)
			b := s.up.one(t, up).JSON()
			jsonEq(t, b["tool_choice"], tc.want)
			jsonEq(t, b["tools"], `[
				{"name":"get_weather","description":"Weather for a place","input_schema":{"type":"object","properties":{"location":{"type":"string"}}}},
				{"name":"get_time","description":"Time in a zone","input_schema":{"type":"object","properties":{"timezone":{"type":"string"}}}}]`)
			m := obj(t, raw)
			if f := path(m, "choices", 0, "finish_reason"); f != "tool_calls" {
				t.Errorf("finish_reason %v", f)
			}
			calls, _ := path(m, "choices", 0, "message", "tool_calls").([]any)
			if len(calls) != 2 {
				t.Fatalf("tool_calls %v", path(m, "choices", 0, "message"))
			}
			for i, want := range []struct{ id, name, args string }{
				{"toolu_mock_1", "get_weather", `{"location":"Paris, France","unit":"celsius"}`},
				{"toolu_mock_2", "get_time", `{"timezone":"Europe/Paris"}`},
			} {
				c := calls[i]
				if path(c, "id") != want.id || path(c, "type") != "function" || path(c, "function", "name") != want.name {
					t.Errorf("call %d: %v", i, c)
				}
				args, ok := path(c, "function", "arguments").(string)
				if !ok {
					t.Fatalf("arguments not a JSON string: %v", c)
				}
				jsonEq(t, parseJSONString(t, args), want.args)
			}
		})
	}

	// Tool results: the assistant's tool_calls become tool_use blocks and
	// all consecutive tool messages one user message of tool_result blocks.
	t.Run("chat_tool_results_to_anthropic", func(t *testing.T) {
		t.Parallel()
		up := "tr-ant"
		body := map[string]any{
			"model": "ant:" + up, "max_tokens": 50, "tools": chatTools(),
			"messages": []any{
				map[string]any{"role": "user", "content": "weather and time in Paris"},
				map[string]any{"role": "assistant", "content": "Let me check.", "tool_calls": []any{
					map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"location":"Paris"}`}},
					map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "get_time", "arguments": ""}},
				}},
				map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "sunny 20C"},
				map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "noon"},
			},
		}
		resp, raw := s.call("/v1/chat/completions", body)
		wantStatus(t, resp, raw, 200)
		b := s.up.one(t, up).JSON()
		msgs, _ := b["messages"].([]any)
		if len(msgs) != 3 {
			t.Fatalf("upstream messages %v, want 3", msgs)
		}
		if path(msgs, 1, "role") != "assistant" || path(msgs, 2, "role") != "user" {
			t.Errorf("roles %v %v", path(msgs, 1, "role"), path(msgs, 2, "role"))
		}
		if path(msgs, 1, "content", 0, "type") != "text" || path(msgs, 1, "content", 0, "text") != "Let me check." {
			t.Errorf("assistant text not first: %v", path(msgs, 1, "content"))
		}
		if n := len(path(msgs, 1, "content").([]any)); path(msgs, 1, "content", n-1, "type") != "tool_use" {
			t.Errorf("tool_use blocks not last: %v", path(msgs, 1, "content"))
		}
		var uses []any
		for _, blk := range path(msgs, 1, "content").([]any) {
			if path(blk, "type") == "tool_use" {
				uses = append(uses, blk)
			}
		}
		if len(uses) != 2 || path(uses, 0, "id") != "call_1" || path(uses, 0, "name") != "get_weather" || path(uses, 1, "id") != "call_2" {
			t.Fatalf("tool_use blocks %v", path(msgs, 1, "content"))
		}
		jsonEq(t, path(uses, 0, "input"), `{"location":"Paris"}`)
		jsonEq(t, path(uses, 1, "input"), `{}`)
		results, _ := path(msgs, 2, "content").([]any)
		if len(results) != 2 {
			t.Fatalf("tool results %v", results)
		}
		for i, want := range [][2]string{{"call_1", "sunny 20C"}, {"call_2", "noon"}} {
			r := results[i]
			if path(r, "type") != "tool_result" || path(r, "tool_use_id") != want[0] || textOf(path(r, "content")) != want[1] {
				t.Errorf("result %d: %v", i, r)
			}
		}
	})

	// messages client → openai upstream: tools, tool_choice, tool_use response.
	mchoices := []struct {
		name string
		msg  any
		want string
	}{
		{"auto", map[string]any{"type": "auto"}, `"auto"`},
		{"any", map[string]any{"type": "any"}, `"required"`},
		{"tool", map[string]any{"type": "tool", "name": "get_time"}, `{"type":"function","function":{"name":"get_time"}}`},
		{"none", map[string]any{"type": "none"}, `"none"`},
		{"auto_no_parallel", map[string]any{"type": "auto", "disable_parallel_tool_use": true}, `"auto"`},
	}
	for _, tc := range mchoices {
		t.Run("messages_to_openai/"+tc.name, func(t *testing.T) {
			t.Parallel()
			up := "tm-" + tc.name + "+tools"
			body := messagesBody("oai:"+up, false)
			body["tools"] = messagesTools()
			body["tool_choice"] = tc.msg
			resp, raw := s.call("/v1/messages", body)
			wantStatus(t, resp, raw, 200)
			b := s.up.one(t, up).JSON()
			jsonEq(t, b["tool_choice"], tc.want)
			if tc.name == "auto_no_parallel" && b["parallel_tool_calls"] != false {
				t.Errorf("parallel_tool_calls %v, want false", b["parallel_tool_calls"])
			}
			jsonEq(t, b["tools"], `[
				{"type":"function","function":{"name":"get_weather","description":"Weather for a place","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}},
				{"type":"function","function":{"name":"get_time","description":"Time in a zone","parameters":{"type":"object","properties":{"timezone":{"type":"string"}}}}}]`)
			m := obj(t, raw)
			if m["stop_reason"] != "tool_use" {
				t.Errorf("stop_reason %v", m["stop_reason"])
			}
			var uses []any
			for _, blk := range m["content"].([]any) {
				if path(blk, "type") == "tool_use" {
					uses = append(uses, blk)
				}
			}
			if len(uses) != 2 || path(uses, 0, "id") != "call_mock_1" || path(uses, 0, "name") != "get_weather" ||
				path(uses, 1, "id") != "call_mock_2" || path(uses, 1, "name") != "get_time" {
				t.Fatalf("content %v", m["content"])
			}
			jsonEq(t, path(uses, 0, "input"), `{"location":"Paris, France","unit":"celsius"}`)
			jsonEq(t, path(uses, 1, "input"), `{"timezone":"Europe/Paris"}`)
		})
	}

	// messages client's tool_use / tool_result → openai tool_calls / tool messages.
	t.Run("messages_tool_results_to_openai", func(t *testing.T) {
		t.Parallel()
		up := "tr-oai"
		body := map[string]any{
			"model": "oai:" + up, "max_tokens": 50, "tools": messagesTools(),
			"messages": []any{
				map[string]any{"role": "user", "content": "weather and time in Paris"},
				map[string]any{"role": "assistant", "content": []any{
					map[string]any{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"location": "Paris"}},
					map[string]any{"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": map[string]any{}},
				}},
				map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny 20C"},
					map[string]any{"type": "tool_result", "tool_use_id": "toolu_2", "content": "noon"},
				}},
			},
		}
		resp, raw := s.call("/v1/messages", body)
		wantStatus(t, resp, raw, 200)
		msgs, _ := s.up.one(t, up).JSON()["messages"].([]any)
		if len(msgs) != 4 {
			t.Fatalf("upstream messages %v, want user, assistant, tool, tool", msgs)
		}
		calls, _ := path(msgs, 1, "tool_calls").([]any)
		if path(msgs, 1, "role") != "assistant" || len(calls) != 2 || path(calls, 0, "id") != "toolu_1" || path(calls, 0, "function", "name") != "get_weather" {
			t.Fatalf("assistant message %v", msgs[1])
		}
		jsonEq(t, parseJSONString(t, str(path(calls, 0, "function", "arguments"))), `{"location":"Paris"}`)
		for i, want := range [][2]string{{"toolu_1", "sunny 20C"}, {"toolu_2", "noon"}} {
			m := msgs[2+i]
			if path(m, "role") != "tool" || path(m, "tool_call_id") != want[0] || textOf(path(m, "content")) != want[1] {
				t.Errorf("tool message %d: %v", i, m)
			}
		}
	})
}
