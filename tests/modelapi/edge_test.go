package modelapi_test

import (
	"strings"
	"testing"
)

// testEdges: text that needs escaping survives every translation, long
// streams, retries on the same target, resets and malformed streams.
func testEdges(t *testing.T, s *suite) {
	const tricky = "He said \"hi\" \\ back\nnew\tline <tag> & ünïcødé 😀 \u2028 end"
	want := strings.Join(strings.Fields(tricky), " ")
	for _, p := range providerTypes {
		for _, ep := range []string{"chat", "messages"} {
			for _, stream := range []bool{false, true} {
				name := "echo/" + ep + "/" + p.typ
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					model := p.name + ":echo-" + ep + "+echo"
					var body map[string]any
					path0 := "/v1/chat/completions"
					if ep == "chat" {
						body = chatBody(model, stream)
					} else {
						body, path0 = messagesBody(model, stream), "/v1/messages"
					}
					body["max_tokens"] = 500
					body["messages"] = []any{map[string]any{"role": "user", "content": tricky}}
					resp, raw := s.call(path0, body)
					wantStatus(t, resp, raw, 200)
					var got string
					switch {
					case ep == "chat" && stream:
						for _, c := range checkChatStream(t, resp, raw, model, "", false) {
							got += str(path(c, "choices", 0, "delta", "content"))
						}
					case ep == "chat":
						got = str(path(obj(t, raw), "choices", 0, "message", "content"))
					case stream:
						for _, e := range checkMessagesStream(t, resp, raw, model, "") {
							got += str(path(e.json(t), "delta", "text"))
						}
					default:
						got = str(path(obj(t, raw), "content", 0, "text"))
					}
					if got != want {
						t.Errorf("echo %q, want %q", got, want)
					}
				})
			}
		}
	}

	t.Run("long_streams", func(t *testing.T) {
		t.Parallel()
		for _, p := range providerTypes {
			body := chatBody(p.name+":long+chunks-400", true)
			body["max_tokens"] = 1000
			body["stream_options"] = map[string]any{"include_usage": true}
			resp, raw := s.call("/v1/chat/completions", body)
			wantStatus(t, resp, raw, 200)
			chunks := checkChatStream(t, resp, raw, p.name+":long+chunks-400", "", true)
			if u := chunks[len(chunks)-1]["usage"]; num(path(u, "completion_tokens")) != 400 {
				t.Errorf("%s: usage %v", p.typ, u)
			}
			mb := messagesBody(p.name+":longm+chunks-400", true)
			mb["max_tokens"] = 1000
			resp, raw = s.call("/v1/messages", mb)
			wantStatus(t, resp, raw, 200)
			n := 0
			for _, e := range checkMessagesStream(t, resp, raw, p.name+":longm+chunks-400", "") {
				if e.event == "content_block_delta" {
					n++
				}
			}
			if n != 400 {
				t.Errorf("%s: %d text deltas, want 400", p.typ, n)
			}
		}
	})

	t.Run("retry_same_target", func(t *testing.T) {
		t.Parallel()
		// One 503, then success: retried on the same target (providers.retries = 1).
		resp, raw := s.call("/v1/chat/completions", chatBody("oai:rt+fail-503+flaky-1", false))
		wantStatus(t, resp, raw, 200)
		if n := s.up.Count("rt+fail-503+flaky-1"); n != 2 {
			t.Errorf("upstream saw %d attempts, want 2", n)
		}
		resp, raw = s.call("/v1/messages", messagesBody("ant:rt529+fail-529+flaky-1", true))
		wantStatus(t, resp, raw, 200)
		checkMessagesStream(t, resp, raw, "ant:rt529+fail-529+flaky-1", "Hello from rt529+fail-529+flaky-1")
	})

	// A connection reset before any answer, or nothing listening: the
	// provider could not be reached, 503 (the gateway's reading of "every
	// route target failed or unavailable"), naming the provider.
	t.Run("reset", func(t *testing.T) {
		t.Parallel()
		for _, p := range providerTypes {
			resp, raw := s.call("/v1/chat/completions", chatBody(p.name+":rs+reset", false))
			_, details := wantError(t, resp, raw, 503, "service_unavailable")
			if details["provider"] != p.name {
				t.Errorf("details %v", details)
			}
			if n := s.up.Count("rs+reset"); n < 2 && p.typ == "openai" {
				t.Errorf("a reset was not retried on the same target (%d attempts)", n)
			}
		}
	})
	t.Run("connection_refused", func(t *testing.T) {
		t.Parallel()
		s.env.MustAdmin(201, "POST", "/admin/providers", map[string]any{
			"name": "dead", "type": "openai", "api_base": "http://127.0.0.1:1/v1", "api_key": "sk-up"})
		resp, raw := s.call("/v1/chat/completions", chatBody("dead:x", false))
		wantError(t, resp, raw, 503, "service_unavailable")
		s.alias(chain("dead-then-ok", [2]string{"dead", "x"}, [2]string{"oai", "after-dead"}))
		resp, raw = s.call("/v1/chat/completions", chatBody("dead-then-ok", false))
		wantStatus(t, resp, raw, 200)
		if s.up.Count("after-dead") != 1 {
			t.Errorf("fallback after a refused connection did not reach the second target")
		}
	})

	t.Run("malformed_stream", func(t *testing.T) {
		t.Parallel()
		for _, p := range providerTypes {
			resp, raw := s.call("/v1/chat/completions", chatBody(p.name+":mfs+malformed", true))
			switch resp.StatusCode {
			case 502:
				wantError(t, resp, raw, 502, "provider_error")
			case 200:
				frames := parseSSE(t, raw)
				n := len(frames)
				if n < 2 || frames[n-1].data != "[DONE]" || frames[n-2].json(t)["error"] == nil {
					t.Errorf("%s: a malformed stream must end in an error chunk: %s", p.typ, raw)
				}
			default:
				t.Errorf("%s: status %d: %s", p.typ, resp.StatusCode, raw)
			}
			resp, raw = s.call("/v1/messages", messagesBody(p.name+":mfs+malformed", true))
			switch resp.StatusCode {
			case 502:
				wantError(t, resp, raw, 502, "provider_error")
			case 200:
				frames := parseSSE(t, raw)
				if len(frames) == 0 || frames[len(frames)-1].event != "error" {
					t.Errorf("%s: a malformed messages stream must end in event: error: %s", p.typ, raw)
				}
			default:
				t.Errorf("%s: status %d: %s", p.typ, resp.StatusCode, raw)
			}
		}
	})
}
