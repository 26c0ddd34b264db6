package mockupstream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/mockupstream"
)

// frame is one SSE frame, parsed here independently of services/sse so the
// mock is checked against the wire rules, not against our own reader.
type frame struct {
	event string
	data  string
}

func readFrames(t *testing.T, r io.Reader) ([]frame, error) {
	t.Helper()
	var out []frame
	var cur frame
	var data []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				cur.data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = frame{}, nil
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if data != nil {
		t.Fatalf("frame not terminated by a blank line: %q", data)
	}
	return out, sc.Err()
}

type hdr map[string]string

func post(t *testing.T, url string, h hdr, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return m
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %q: %v", s, err)
	}
	return m
}

var (
	openaiAuth    = hdr{"Authorization": "Bearer sk-test"}
	azureAuth     = hdr{"api-key": "az-test"}
	anthropicAuth = hdr{"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}
)

// chatBody has 2 system words + 4 user words = 6 input tokens.
func chatBody(model string, stream, usage bool) string {
	b := `{"model":"` + model + `","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"say hello to me"}]`
	if stream {
		b += `,"stream":true`
	}
	if usage {
		b += `,"stream_options":{"include_usage":true}`
	}
	return b + "}"
}

// messagesBody has 2 system words + 4 user words (in a text part) = 6 input tokens.
func messagesBody(model string, stream bool) string {
	b := `{"model":"` + model + `","max_tokens":100,"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"say hello to me"}]}]`
	if stream {
		b += `,"stream":true`
	}
	return b + "}"
}

func TestOpenAINonStream(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	for _, path := range []string{"/v1/chat/completions", "/chat/completions"} {
		resp := post(t, m.URL()+path, openaiAuth, chatBody("gpt-4o", false, false))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		got := decode(t, resp)
		if got["object"] != "chat.completion" || got["model"] != "gpt-4o" {
			t.Fatalf("object/model: %v", got)
		}
		ch := got["choices"].([]any)[0].(map[string]any)
		msg := ch["message"].(map[string]any)
		if msg["role"] != "assistant" || msg["content"] != "Hello from gpt-4o" || ch["finish_reason"] != "stop" {
			t.Fatalf("choice: %v", ch)
		}
		u := got["usage"].(map[string]any)
		if u["prompt_tokens"] != 6.0 || u["completion_tokens"] != 3.0 || u["total_tokens"] != 9.0 {
			t.Fatalf("usage: %v", u)
		}
	}
	if n := m.Count("gpt-4o"); n != 2 {
		t.Fatalf("count %d", n)
	}
	r, _ := m.LastRequest()
	if r.Path != "/chat/completions" || r.Format != "openai" || r.Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("recorded %+v", r)
	}
	if r.JSON()["model"] != "gpt-4o" {
		t.Fatalf("recorded body %s", r.Body)
	}
}

func TestOpenAIStreamWireFormat(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	for _, usage := range []bool{false, true} {
		resp := post(t, m.URL()+"/v1/chat/completions", openaiAuth, chatBody("gpt-4o", true, usage))
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("content-type %q", ct)
		}
		frames, err := readFrames(t, resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if last := frames[len(frames)-1]; last.data != "[DONE]" {
			t.Fatalf("last frame %q", last.data)
		}
		frames = frames[:len(frames)-1]
		var id string
		var created float64
		var text strings.Builder
		var usageChunks int
		for i, f := range frames {
			c := jsonOf(t, f.data)
			if c["object"] != "chat.completion.chunk" {
				t.Fatalf("object %v", c["object"])
			}
			if i == 0 {
				id, created = c["id"].(string), c["created"].(float64)
			} else if c["id"] != id || c["created"] != created {
				t.Fatalf("chunk %d id/created differ", i)
			}
			u, hasUsage := c["usage"]
			if !usage && hasUsage {
				t.Fatalf("usage field without include_usage: %s", f.data)
			}
			choices := c["choices"].([]any)
			if len(choices) == 0 {
				usageChunks++
				if i != len(frames)-1 {
					t.Fatal("usage chunk is not last before [DONE]")
				}
				um := u.(map[string]any)
				if um["prompt_tokens"] != 6.0 || um["completion_tokens"] != 3.0 || um["total_tokens"] != 9.0 {
					t.Fatalf("usage %v", um)
				}
				continue
			}
			if usage && u != nil {
				t.Fatalf("non-usage chunk with usage %v", u)
			}
			delta := choices[0].(map[string]any)["delta"].(map[string]any)
			if i == 0 && delta["role"] != "assistant" {
				t.Fatalf("first delta %v", delta)
			}
			if i > 0 && delta["role"] != nil {
				t.Fatalf("role repeated in chunk %d", i)
			}
			if s, ok := delta["content"].(string); ok {
				text.WriteString(s)
			}
		}
		if text.String() != "Hello from gpt-4o" {
			t.Fatalf("text %q", text.String())
		}
		if want := map[bool]int{false: 0, true: 1}[usage]; usageChunks != want {
			t.Fatalf("usage chunks %d, want %d", usageChunks, want)
		}
		fin := jsonOf(t, frames[len(frames)-1-usageChunks].data)["choices"].([]any)[0].(map[string]any)
		if fin["finish_reason"] != "stop" {
			t.Fatalf("finish %v", fin)
		}
	}
}

func TestOpenAIStreamTools(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	resp := post(t, m.URL()+"/v1/chat/completions", openaiAuth, chatBody("gpt-4o+tools", true, true))
	frames, err := readFrames(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	type call struct{ id, name, args string }
	var calls []call
	var finish string
	for _, f := range frames[:len(frames)-1] {
		choices := jsonOf(t, f.data)["choices"].([]any)
		if len(choices) == 0 {
			continue
		}
		ch := choices[0].(map[string]any)
		if fr, ok := ch["finish_reason"].(string); ok {
			finish = fr
		}
		tcs, _ := ch["delta"].(map[string]any)["tool_calls"].([]any)
		for _, tc := range tcs {
			tc := tc.(map[string]any)
			idx := int(tc["index"].(float64))
			fn := tc["function"].(map[string]any)
			if id, ok := tc["id"].(string); ok {
				if idx != len(calls) {
					t.Fatalf("tool call index %d, want %d (no gaps)", idx, len(calls))
				}
				if tc["type"] != "function" || fn["arguments"] != "" {
					t.Fatalf("first tool delta %v", tc)
				}
				calls = append(calls, call{id: id, name: fn["name"].(string)})
				continue
			}
			calls[idx].args += fn["arguments"].(string)
		}
	}
	if finish != "tool_calls" || len(calls) != 2 || calls[0].name != "get_weather" || calls[1].name != "get_time" {
		t.Fatalf("finish %q calls %+v", finish, calls)
	}
	for _, c := range calls {
		if !json.Valid([]byte(c.args)) {
			t.Fatalf("arguments not JSON: %q", c.args)
		}
	}
}

func TestAzure(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	url := m.URL() + "/openai/deployments/my-deploy/chat/completions?api-version=2024-10-21"
	resp := post(t, url, azureAuth, chatBody("ignored-model", false, false))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := decode(t, resp); got["model"] != "my-deploy" {
		t.Fatalf("deployment must win: %v", got["model"])
	}
	if m.Count("my-deploy") != 1 {
		t.Fatal("counted under the deployment")
	}
	if resp := post(t, url, openaiAuth, chatBody("x", false, false)); resp.StatusCode != 401 {
		t.Fatalf("Bearer on Azure: %d", resp.StatusCode)
	}
	noVersion := m.URL() + "/openai/deployments/my-deploy/chat/completions"
	resp = post(t, noVersion, azureAuth, chatBody("x", false, false))
	if resp.StatusCode != 400 {
		t.Fatalf("missing api-version: %d", resp.StatusCode)
	}
	if e := decode(t, resp)["error"].(map[string]any); e["code"] != "MissingApiVersionParameter" {
		t.Fatalf("error %v", e)
	}
	resp = post(t, url, azureAuth, chatBody("x", true, true))
	frames, err := readFrames(t, resp.Body)
	if err != nil || frames[len(frames)-1].data != "[DONE]" {
		t.Fatalf("azure stream: %v %v", frames, err)
	}
}

func TestAnthropicNonStream(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	resp := post(t, m.URL()+"/v1/messages", anthropicAuth, messagesBody("claude-x", false))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := decode(t, resp)
	if got["type"] != "message" || got["role"] != "assistant" || got["stop_reason"] != "end_turn" || got["model"] != "claude-x" {
		t.Fatalf("message %v", got)
	}
	content := got["content"].([]any)
	if b := content[0].(map[string]any); b["type"] != "text" || b["text"] != "Hello from claude-x" {
		t.Fatalf("content %v", content)
	}
	u := got["usage"].(map[string]any)
	if u["input_tokens"] != 6.0 || u["output_tokens"] != 3.0 {
		t.Fatalf("usage %v", u)
	}
}

func TestAnthropicValidation(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	cases := []struct {
		name   string
		h      hdr
		body   string
		status int
		typ    string
	}{
		{"no key", hdr{"anthropic-version": "2023-06-01"}, messagesBody("c", false), 401, "authentication_error"},
		{"no version", hdr{"x-api-key": "k"}, messagesBody("c", false), 400, "invalid_request_error"},
		{"no max_tokens", anthropicAuth, `{"model":"c","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error"},
		{"bad json", anthropicAuth, `{"model":`, 400, "invalid_request_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, m.URL()+"/v1/messages", tc.h, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got := decode(t, resp)
			e := got["error"].(map[string]any)
			if got["type"] != "error" || e["type"] != tc.typ || e["message"] == "" {
				t.Fatalf("body %v", got)
			}
		})
	}
}

func TestAnthropicStreamEventOrder(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	for _, model := range []string{"claude-x", "claude-x+tools"} {
		resp := post(t, m.URL()+"/v1/messages", anthropicAuth, messagesBody(model, true))
		frames, err := readFrames(t, resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		var text, args strings.Builder
		var outTok float64
		for _, f := range frames {
			d := jsonOf(t, f.data)
			if d["type"] != f.event {
				t.Fatalf("event %q carries type %v", f.event, d["type"])
			}
			if f.event != "content_block_delta" && f.event != "ping" {
				order = append(order, f.event)
			}
			switch f.event {
			case "message_start":
				msg := d["message"].(map[string]any)
				if len(msg["content"].([]any)) != 0 || msg["usage"].(map[string]any)["input_tokens"] != 6.0 {
					t.Fatalf("message_start %v", msg)
				}
			case "content_block_delta":
				delta := d["delta"].(map[string]any)
				switch delta["type"] {
				case "text_delta":
					text.WriteString(delta["text"].(string))
				case "input_json_delta":
					args.WriteString(delta["partial_json"].(string))
				}
			case "message_delta":
				outTok = d["usage"].(map[string]any)["output_tokens"].(float64)
			}
		}
		var want []string
		if strings.HasSuffix(model, "tools") {
			want = strings.Fields("message_start content_block_start content_block_stop content_block_start content_block_stop message_delta message_stop")
			if args.String() != `{"location":"Paris, France","unit":"celsius"}{"timezone":"Europe/Paris"}` || outTok != 20 {
				t.Fatalf("args %q out %v", args.String(), outTok)
			}
		} else {
			want = strings.Fields("message_start content_block_start content_block_stop message_delta message_stop")
			if text.String() != "Hello from "+model || outTok != 3 {
				t.Fatalf("text %q out %v", text.String(), outTok)
			}
		}
		if strings.Join(order, " ") != strings.Join(want, " ") {
			t.Fatalf("order %v\nwant  %v", order, want)
		}
	}
}

func TestFailuresAreVendorShaped(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	resp := post(t, m.URL()+"/v1/chat/completions", openaiAuth, chatBody("fail-429", false, false))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("status %d retry-after %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	e := decode(t, resp)["error"].(map[string]any)
	if e["code"] != "rate_limit_exceeded" || e["message"] == "" {
		t.Fatalf("openai error %v", e)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			t.Fatalf("openai error lacks %q", k)
		}
	}
	resp = post(t, m.URL()+"/v1/messages", anthropicAuth, messagesBody("claude+fail-400", false))
	got := decode(t, resp)
	if resp.StatusCode != 400 || got["type"] != "error" || got["error"].(map[string]any)["type"] != "invalid_request_error" {
		t.Fatalf("anthropic 400: %d %v", resp.StatusCode, got)
	}
	// The header wins over the model name.
	resp = post(t, m.URL()+"/v1/chat/completions", hdr{"Authorization": "Bearer k", mockupstream.HeaderDirectives: "fail-503"}, chatBody("gpt+fail-500", false, false))
	if resp.StatusCode != 503 {
		t.Fatalf("header directive: %d", resp.StatusCode)
	}
}

func TestFailTimesThenSucceed(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	// Per request: counted per model.
	for i, want := range []int{500, 500, 200, 200} {
		if resp := post(t, m.URL()+"/v1/chat/completions", openaiAuth, chatBody("m+flaky-2", false, false)); resp.StatusCode != want {
			t.Fatalf("flaky request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	// Globally.
	m.SetMode(mockupstream.Mode{FailStatus: 529, FailTimes: 1})
	for i, want := range []int{529, 200} {
		if resp := post(t, m.URL()+"/v1/messages", anthropicAuth, messagesBody("c", false)); resp.StatusCode != want {
			t.Fatalf("global request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	m.SetMode(mockupstream.Mode{FailStatus: 500})
	if resp := post(t, m.URL()+"/v1/messages", anthropicAuth, messagesBody("c+ok", false)); resp.StatusCode != 200 {
		t.Fatalf("ok directive: %d", resp.StatusCode)
	}
	if m.Total() != 7 || len(m.Requests()) != 7 {
		t.Fatalf("total %d requests %d", m.Total(), len(m.Requests()))
	}
	m.Reset()
	if m.Total() != 0 || len(m.Requests()) != 0 {
		t.Fatal("reset")
	}
}

func TestMaxTokensTruncates(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	body := `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"a b c"}]}`
	got := decode(t, post(t, m.URL()+"/v1/chat/completions", openaiAuth, body))
	ch := got["choices"].([]any)[0].(map[string]any)
	if ch["finish_reason"] != "length" || ch["message"].(map[string]any)["content"] != "Hello from" {
		t.Fatalf("choice %v", ch)
	}
	got = decode(t, post(t, m.URL()+"/v1/messages", anthropicAuth, strings.Replace(body, `"m"`, `"m+echo"`, 1)))
	if got["stop_reason"] != "max_tokens" || got["content"].([]any)[0].(map[string]any)["text"] != "a b" {
		t.Fatalf("echo+max_tokens %v", got)
	}
}

func TestChunksAndGap(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	start := time.Now()
	resp := post(t, m.URL()+"/v1/messages", anthropicAuth, messagesBody("c+chunks-5+gap-10", true))
	frames, err := readFrames(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, f := range frames {
		if f.event == "content_block_delta" {
			deltas++
		}
	}
	if deltas != 5 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("deltas %d after %v", deltas, time.Since(start))
	}
}

func TestFaults(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()

	t.Run("break-stream", func(t *testing.T) {
		for _, c := range []struct{ path, body string }{
			{"/v1/chat/completions", chatBody("m+break-stream", true, true)},
			{"/v1/messages", messagesBody("m+break-stream", true)},
		} {
			h := openaiAuth
			if c.path == "/v1/messages" {
				h = anthropicAuth
			}
			resp := post(t, m.URL()+c.path, h, c.body)
			b, err := io.ReadAll(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%s: err %v after %q", c.path, err, b)
			}
			if len(b) == 0 || bytes.Contains(b, []byte("[DONE]")) || bytes.Contains(b, []byte("message_stop")) {
				t.Fatalf("%s: body %q", c.path, b)
			}
		}
	})
	t.Run("error-event", func(t *testing.T) {
		resp := post(t, m.URL()+"/v1/messages", anthropicAuth, messagesBody("m+error-event", true))
		frames, err := readFrames(t, resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		last := frames[len(frames)-1]
		if last.event != "error" || !strings.Contains(last.data, "overloaded_error") {
			t.Fatalf("last %+v", last)
		}
		resp = post(t, m.URL()+"/v1/chat/completions", openaiAuth, chatBody("m+error-event", true, false))
		frames, err = readFrames(t, resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if e := jsonOf(t, frames[len(frames)-1].data)["error"]; e == nil {
			t.Fatalf("last chunk %q", frames[len(frames)-1].data)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		resp := post(t, m.URL()+"/v1/chat/completions", openaiAuth, chatBody("malformed", false, false))
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || json.Valid(b) {
			t.Fatalf("%d %q", resp.StatusCode, b)
		}
	})
	t.Run("reset", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, m.URL()+"/v1/chat/completions", strings.NewReader(chatBody("reset", false, false)))
		req.Header.Set("Authorization", "Bearer k")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatal("reset answered")
		}
	})
	t.Run("hang", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.URL()+"/v1/chat/completions", strings.NewReader(chatBody("hang", false, false)))
		req.Header.Set("Authorization", "Bearer k")
		_, err := http.DefaultClient.Do(req)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("slow", func(t *testing.T) {
		start := time.Now()
		post(t, m.URL()+"/v1/chat/completions", openaiAuth, chatBody("slow-60", false, false))
		if time.Since(start) < 60*time.Millisecond {
			t.Fatal("not slow")
		}
	})
}

func TestAPIKeyAndRoutes(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	m.SetMode(mockupstream.Mode{APIKey: "right"})
	if resp := post(t, m.URL()+"/v1/chat/completions", hdr{"Authorization": "Bearer wrong"}, chatBody("m", false, false)); resp.StatusCode != 401 {
		t.Fatalf("wrong key %d", resp.StatusCode)
	}
	if resp := post(t, m.URL()+"/v1/chat/completions", hdr{"Authorization": "Bearer right"}, chatBody("m", false, false)); resp.StatusCode != 200 {
		t.Fatalf("right key %d", resp.StatusCode)
	}
	if resp := post(t, m.URL()+"/v2/nothing", openaiAuth, "{}"); resp.StatusCode != 404 {
		t.Fatalf("unknown route %d", resp.StatusCode)
	}
}

func TestEscaping(t *testing.T) {
	m := mockupstream.New()
	defer m.Close()
	body := `{"model":"m+echo","messages":[{"role":"user","content":"quote\" back\\slash \u0001 é 😀"}]}`
	got := decode(t, post(t, m.URL()+"/v1/chat/completions", openaiAuth, body))
	want := "quote\" back\\slash \u0001 é 😀"
	if c := got["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; c != want {
		t.Fatalf("content %q, want %q", c, want)
	}
}

func BenchmarkOpenAIStream(b *testing.B) {
	m := mockupstream.NewUnstarted()
	m.SetRecording(false)
	body := []byte(chatBody("gpt-4o+chunks-20", true, true))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		w := httptest.NewRecorder()
		m.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

func BenchmarkAnthropic(b *testing.B) {
	m := mockupstream.NewUnstarted()
	m.SetRecording(false)
	body := []byte(messagesBody("claude", false))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(body))
		req.Header.Set("x-api-key", "k")
		req.Header.Set("anthropic-version", "2023-06-01")
		w := httptest.NewRecorder()
		m.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
