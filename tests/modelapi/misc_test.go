package modelapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

func testMidStream(t *testing.T, s *suite) {
	for _, p := range providerTypes {
		for _, fault := range []string{"break-stream", "error-event"} {
			t.Run("chat/"+p.typ+"/"+fault, func(t *testing.T) {
				t.Parallel()
				model := p.name + ":mc-" + p.typ + "+" + fault
				resp, raw := s.call("/v1/chat/completions", chatBody(model, true))
				wantStatus(t, resp, raw, 200)
				frames := parseSSE(t, raw)
				n := len(frames)
				if n < 3 || frames[n-1].data != "[DONE]" {
					t.Fatalf("stream does not end with [DONE]: %s", raw)
				}
				last := frames[n-2].json(t)
				e, ok := last["error"].(map[string]any)
				if !ok || str(e["message"]) == "" || str(e["type"]) == "" {
					t.Fatalf("frame before [DONE] has no error object: %s", frames[n-2].data)
				}
				if path(frames[0].json(t), "choices", 0, "delta", "role") != "assistant" {
					t.Errorf("first chunk %s", frames[0].data)
				}
				for _, f := range frames[:n-2] {
					if fr := path(f.json(t), "choices", 0, "finish_reason"); fr == "stop" {
						t.Errorf("a cut stream reported finish_reason stop")
					}
				}
			})
			t.Run("messages/"+p.typ+"/"+fault, func(t *testing.T) {
				t.Parallel()
				model := p.name + ":mm-" + p.typ + "+" + fault
				resp, raw := s.call("/v1/messages", messagesBody(model, true))
				wantStatus(t, resp, raw, 200)
				frames := parseSSE(t, raw)
				if len(frames) < 2 {
					t.Fatalf("frames: %s", raw)
				}
				if frames[0].event != "message_start" {
					t.Errorf("first event %q", frames[0].event)
				}
				last := frames[len(frames)-1]
				if last.event != "error" {
					t.Fatalf("last event %q, want error: %s", last.event, raw)
				}
				d := last.json(t)
				if d["type"] != "error" || str(path(d, "error", "type")) == "" || str(path(d, "error", "message")) == "" {
					t.Errorf("error event %s", last.data)
				}
				for _, f := range frames {
					if f.event == "message_stop" {
						t.Errorf("a cut stream sent message_stop")
					}
				}
			})
		}
	}
}

// testDisconnect: a client that goes away mid-stream makes the gateway hang
// up on the upstream, which the wrapped mock sees as its handler returning.
func testDisconnect(t *testing.T, s *suite) {
	for _, tc := range []struct{ name, path, model string }{
		{"chat_openai", "/v1/chat/completions", "oai:dc-chat+chunks-200+gap-200"},
		{"chat_azure", "/v1/chat/completions", "az:dc-chat-az+chunks-200+gap-200"},
		{"chat_anthropic", "/v1/chat/completions", "ant:dc-chat-ant+chunks-200+gap-200"},
		{"messages_anthropic", "/v1/messages", "ant:dc-msg+chunks-200+gap-200"},
		{"messages_openai", "/v1/messages", "oai:dc-msg-oai+chunks-200+gap-200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body map[string]any
			if tc.path == "/v1/messages" {
				body = messagesBody(tc.model, true)
				body["max_tokens"] = 1000
			} else {
				body = chatBody(tc.model, true)
				delete(body, "max_tokens")
			}
			raw, _ := json.Marshal(body)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", s.env.BaseURL+tc.path, bytes.NewReader(raw))
			req.Header.Set("Authorization", "Bearer "+s.key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := s.env.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			br := bufio.NewReader(resp.Body)
			for { // read the first complete frame
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("read first frame: %v", err)
				}
				if strings.TrimSpace(line) == "" {
					break
				}
			}
			_, upModel, _ := strings.Cut(tc.model, ":")
			ended, ok := s.up.endedFor(upModel)
			if !ok {
				t.Fatalf("upstream has not seen %q", upModel)
			}
			select {
			case <-ended:
				t.Fatalf("upstream request ended before the client left")
			default:
			}
			cancel()
			select {
			case <-ended:
			case <-time.After(time.Second):
				t.Fatalf("upstream request still running 1s after the client disconnected")
			}
		})
	}
}

// testDisconnectWaiting: a client that leaves while the upstream has not
// answered yet also ends the upstream request.
func testDisconnectWaiting(t *testing.T, s *suite) {
	for _, p := range providerTypes {
		t.Run(p.typ, func(t *testing.T) {
			t.Parallel()
			up := "dcw-" + p.typ + "+hang"
			raw, _ := json.Marshal(chatBody(p.name+":"+up, false))
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", s.env.BaseURL+"/v1/chat/completions", bytes.NewReader(raw))
			req.Header.Set("Authorization", "Bearer "+s.key)
			req.Header.Set("Content-Type", "application/json")
			errc := make(chan error, 1)
			go func() {
				resp, err := s.env.Client.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			var ended chan struct{}
			deadline := time.Now().Add(5 * time.Second)
			for ended == nil {
				if time.Now().After(deadline) {
					t.Fatalf("upstream never saw the request")
				}
				if ch, ok := s.up.endedFor(up); ok {
					ended = ch
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-errc; err == nil {
				t.Errorf("request finished without error after cancel")
			}
			select {
			case <-ended:
			case <-time.After(time.Second):
				t.Fatalf("upstream request still running 1s after the client disconnected")
			}
		})
	}
}

func testListModels(t *testing.T, s *suite) {
	s.alias(simple("lm-a", "oai", "lm-a"))
	s.alias(simple("lm-b", "ant", "lm-b"))
	off := s.alias(simple("lm-off", "oai", "lm-off"))
	s.env.MustAdmin(200, "PUT", "/admin/models/aliases/"+off["id"].(string), map[string]any{"enabled": false})

	ids := func(key string) []string {
		resp, raw := s.env.Do("GET", "/v1/models", nil, map[string]string{"Authorization": "Bearer " + key})
		wantStatus(t, resp, raw, 200)
		m := obj(t, raw)
		if m["object"] != "list" {
			t.Errorf("object %v", m["object"])
		}
		var out []string
		for _, d := range m["data"].([]any) {
			if path(d, "object") != "model" || str(path(d, "id")) == "" || path(d, "owned_by") == nil || num(path(d, "created")) <= 0 {
				t.Errorf("model entry %v", d)
			}
			out = append(out, str(path(d, "id")))
		}
		sort.Strings(out)
		return out
	}
	all := ids(s.key)
	has := map[string]bool{}
	for _, id := range all {
		has[id] = true
	}
	if !has["lm-a"] || !has["lm-b"] || has["lm-off"] {
		t.Errorf("unrestricted key lists %v", all)
	}
	k := s.newKey(map[string]any{"name": "lm", "allowed_models": []any{"lm-b", "lm-off", "oai:x"}})["key"].(string)
	if got := ids(k); strings.Join(got, ",") != "lm-b" {
		t.Errorf("restricted key lists %v, want [lm-b]", got)
	}
	resp, raw := s.env.Do("GET", "/v1/models", nil, nil)
	wantError(t, resp, raw, 401, "authentication_error")
}

func testAdminChanges(t *testing.T, s *suite) {
	a := s.alias(simple("switch", "oai", "sw1"))
	resp, raw := s.call("/v1/chat/completions", chatBody("switch", false))
	wantStatus(t, resp, raw, 200)
	if resp.Header.Get("X-Gateway-Provider") != "oai" {
		t.Fatalf("first call served by %q", resp.Header.Get("X-Gateway-Provider"))
	}
	// By name, then by id.
	s.env.MustAdmin(200, "PUT", "/admin/models/aliases/switch", map[string]any{"provider": "ant", "model": "sw2"})
	resp, raw = s.call("/v1/chat/completions", chatBody("switch", false))
	wantStatus(t, resp, raw, 200)
	if resp.Header.Get("X-Gateway-Provider") != "ant" || resp.Header.Get("X-Gateway-Model") != "sw2" {
		t.Errorf("after edit served by %s/%s", resp.Header.Get("X-Gateway-Provider"), resp.Header.Get("X-Gateway-Model"))
	}
	if path(obj(t, raw), "choices", 0, "message", "content") != "Hello from sw2" {
		t.Errorf("body %s", raw)
	}
	s.env.MustAdmin(200, "PUT", "/admin/models/aliases/"+a["id"].(string), map[string]any{"provider": "az", "model": "sw3"})
	resp, raw = s.call("/v1/messages", messagesBody("switch", false))
	wantStatus(t, resp, raw, 200)
	if resp.Header.Get("X-Gateway-Provider") != "az" || s.up.Count("sw3") != 1 {
		t.Errorf("after second edit served by %q", resp.Header.Get("X-Gateway-Provider"))
	}
	// Disabling the alias: the next request no longer finds it.
	s.env.MustAdmin(200, "PUT", "/admin/models/aliases/switch", map[string]any{"enabled": false})
	resp, raw = s.call("/v1/chat/completions", chatBody("switch", false))
	wantError(t, resp, raw, 404, "not_found_error")
	// Deleting the alias: 404.
	s.env.MustAdmin(200, "DELETE", "/admin/models/aliases/switch", nil)
	resp, raw = s.call("/v1/chat/completions", chatBody("switch", false))
	wantError(t, resp, raw, 404, "not_found_error")
	// Provider edits apply at once too: a rotated key, then disabling → 503.
	s.provider("oai-edit", "openai")
	id := providerID(t, s, "oai-edit")
	resp, raw = s.call("/v1/chat/completions", chatBody("oai-edit:pe", false))
	wantStatus(t, resp, raw, 200)
	// A new upstream credential is used on the next request.
	s.env.MustAdmin(200, "PUT", "/admin/providers/"+id, map[string]any{"api_key": "sk-rotated"})
	resp, raw = s.call("/v1/chat/completions", chatBody("oai-edit:pe2", false))
	wantStatus(t, resp, raw, 200)
	if got := s.up.one(t, "pe2").Header.Get("Authorization"); got != "Bearer sk-rotated" {
		t.Errorf("after key rotation upstream got %q", got)
	}
	s.env.MustAdmin(200, "PUT", "/admin/providers/"+id, map[string]any{"enabled": false})
	resp, raw = s.call("/v1/chat/completions", chatBody("oai-edit:pe", false))
	wantError(t, resp, raw, 503, "service_unavailable")
}

// testSpend: each call (streams included, usage chunk not requested) is
// charged from the upstream's usage at the serving alias's prices; a
// provider:model call uses the first alias with that provider and model.
func testSpend(t *testing.T, s *suite) {
	s.alias(map[string]any{"alias": "priced", "provider": "oai", "model": "priced-m", "input_price_per_1k": 2.0, "output_price_per_1k": 4.0})
	k := s.newKey(map[string]any{"name": "spender"})
	key, id := k["key"].(string), k["id"].(string)
	for _, tc := range []struct {
		path string
		body any
	}{
		{"/v1/chat/completions", chatBody("priced", false)},
		{"/v1/chat/completions", chatBody("oai:priced-m", false)},
		{"/v1/chat/completions", chatBody("priced", true)},
		{"/v1/messages", messagesBody("priced", true)},
	} {
		resp, raw := s.callKey(key, tc.path, tc.body)
		wantStatus(t, resp, raw, 200)
	}
	// 5 input × 2/1k + 3 output × 4/1k = 0.022 per call.
	const want = 4 * 0.022
	var got float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = num(s.env.MustAdmin(200, "GET", "/admin/keys/"+id, nil)["current_spend"])
		if math.Abs(got-want) < 1e-9 {
			return
		}
	}
	t.Errorf("current_spend %v, want %v", got, want)
}

// testCutStreamBilled: a stream cut mid-way is still charged, estimated
// from the text that arrived.
func testCutStreamBilled(t *testing.T, s *suite) {
	s.alias(map[string]any{"alias": "cut-priced", "provider": "oai", "model": "cutp+break-stream", "input_price_per_1k": 2.0, "output_price_per_1k": 4.0})
	k := s.newKey(map[string]any{"name": "cutter"})
	resp, raw := s.callKey(k["key"].(string), "/v1/chat/completions", chatBody("cut-priced", true))
	wantStatus(t, resp, raw, 200)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if num(s.env.MustAdmin(200, "GET", "/admin/keys/"+k["id"].(string), nil)["current_spend"]) > 0 {
			return
		}
	}
	t.Errorf("a cut stream was not charged")
}

// testConcurrentStreams runs many streams of every format and provider at
// once (for the race detector and for cross-talk between streams).
func testConcurrentStreams(t *testing.T, s *suite) {
	for i := range 60 {
		p := providerTypes[i%3]
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			up := fmt.Sprintf("cs-%d", i)
			model := p.name + ":" + up
			if i%2 == 0 {
				body := chatBody(model, true)
				body["stream_options"] = map[string]any{"include_usage": true}
				resp, raw := s.call("/v1/chat/completions", body)
				wantStatus(t, resp, raw, 200)
				checkChatStream(t, resp, raw, model, "Hello from "+up, true)
			} else {
				resp, raw := s.call("/v1/messages", messagesBody(model, true))
				wantStatus(t, resp, raw, 200)
				checkMessagesStream(t, resp, raw, model, "Hello from "+up)
			}
		})
	}
}
