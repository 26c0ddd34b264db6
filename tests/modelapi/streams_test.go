package modelapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// checkChatStream checks an OpenAI chunk stream frame by frame and returns
// the chunks (without [DONE]).
func checkChatStream(t *testing.T, resp *http.Response, raw []byte, model, text string, includeUsage bool) []map[string]any {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q", ct)
	}
	frames := parseSSE(t, raw)
	if len(frames) < 3 {
		t.Fatalf("only %d frames: %s", len(frames), raw)
	}
	if last := frames[len(frames)-1]; last.data != "[DONE]" {
		t.Fatalf("last frame %q, want [DONE]", last.data)
	}
	var (
		chunks  []map[string]any
		id      string
		created float64
		content strings.Builder
		finish  string
		usage   map[string]any
	)
	for i, f := range frames[:len(frames)-1] {
		if f.data == "[DONE]" {
			t.Fatalf("[DONE] at frame %d of %d", i, len(frames))
		}
		c := f.json(t)
		chunks = append(chunks, c)
		if c["object"] != "chat.completion.chunk" {
			t.Errorf("chunk %d object %v", i, c["object"])
		}
		if c["model"] != model {
			t.Errorf("chunk %d model %v, want %q", i, c["model"], model)
		}
		if i == 0 {
			id, created = str(c["id"]), num(c["created"])
			if id == "" || created <= 0 {
				t.Errorf("first chunk id/created: %v", c)
			}
			if path(c, "choices", 0, "delta", "role") != "assistant" {
				t.Errorf("first delta has no role assistant: %v", c)
			}
		} else if str(c["id"]) != id || num(c["created"]) != created {
			t.Errorf("chunk %d id/created %v/%v differ from %v/%v", i, c["id"], c["created"], id, created)
		}
		choices, isList := c["choices"].([]any)
		if u, ok := c["usage"].(map[string]any); ok {
			if !isList || len(choices) != 0 {
				t.Errorf("usage chunk with choices %v", c["choices"])
			}
			if usage != nil {
				t.Errorf("two usage chunks")
			}
			usage = u
			continue
		}
		if len(choices) != 1 {
			t.Errorf("chunk %d has %d choices", i, len(choices))
			continue
		}
		if u, present := c["usage"]; includeUsage && (!present || u != nil) {
			t.Errorf("chunk %d: usage %v (present %v), want null while include_usage is set", i, u, present)
		}
		content.WriteString(str(path(choices, 0, "delta", "content")))
		if fr := str(path(choices, 0, "finish_reason")); fr != "" {
			finish = fr
		}
	}
	if text != "" {
		if content.String() != text {
			t.Errorf("streamed content %q, want %q", content.String(), text)
		}
		if finish != "stop" {
			t.Errorf("finish_reason %q, want stop", finish)
		}
	}
	if includeUsage {
		if usage == nil {
			t.Errorf("no usage chunk though include_usage was set")
		} else {
			if _, ok := chunks[len(chunks)-1]["usage"].(map[string]any); !ok {
				t.Errorf("usage chunk is not the last before [DONE]")
			}
			if text != "" && (num(usage["prompt_tokens"]) != wantIn || num(usage["completion_tokens"]) != wantOut || num(usage["total_tokens"]) != wantIn+wantOut) {
				t.Errorf("stream usage %v", usage)
			}
		}
	} else if usage != nil {
		t.Errorf("usage chunk sent though the client did not ask: %v", usage)
	}
	return chunks
}

// checkMessagesStream checks the Anthropic event sequence and returns the
// events (ping dropped).
func checkMessagesStream(t *testing.T, resp *http.Response, raw []byte, model, text string) []frame {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q", ct)
	}
	var evs []frame
	for _, f := range parseSSE(t, raw) {
		if f.event == "ping" {
			continue
		}
		if f.event == "" {
			t.Errorf("frame without event: %q", f.data)
		}
		if ty := str(f.json(t)["type"]); ty != f.event {
			t.Errorf("event %q carries type %q", f.event, ty)
		}
		evs = append(evs, f)
	}
	// message_start (content_block_start delta* content_block_stop)+ message_delta+ message_stop
	state := "start"
	open := -1
	var (
		sb       strings.Builder
		inTok    float64
		outTok   float64
		stop     string
		names    []string
		blockIdx = -1
	)
	for _, e := range evs {
		names = append(names, e.event)
		d := e.json(t)
		switch e.event {
		case "message_start":
			if state != "start" {
				t.Errorf("message_start in state %s", state)
			}
			state = "blocks"
			if path(d, "message", "model") != model || path(d, "message", "role") != "assistant" {
				t.Errorf("message_start message %v", d["message"])
			}
			if c, _ := path(d, "message", "content").([]any); len(c) != 0 {
				t.Errorf("message_start content not empty: %v", c)
			}
			inTok = num(path(d, "message", "usage", "input_tokens"))
		case "content_block_start":
			if state != "blocks" || open != -1 {
				t.Errorf("content_block_start in state %s (open %d)", state, open)
			}
			open = int(num(d["index"]))
			if open != blockIdx+1 {
				t.Errorf("block index %d after %d", open, blockIdx)
			}
			blockIdx = open
		case "content_block_delta":
			if open == -1 || int(num(d["index"])) != open {
				t.Errorf("delta for index %v while %d open", d["index"], open)
			}
			if path(d, "delta", "type") == "text_delta" {
				sb.WriteString(str(path(d, "delta", "text")))
			}
		case "content_block_stop":
			if open == -1 || int(num(d["index"])) != open {
				t.Errorf("stop for index %v while %d open", d["index"], open)
			}
			open = -1
		case "message_delta":
			if open != -1 || (state != "blocks" && state != "delta") {
				t.Errorf("message_delta in state %s, open %d", state, open)
			}
			state = "delta"
			if sr := str(path(d, "delta", "stop_reason")); sr != "" {
				stop = sr
			}
			outTok = num(path(d, "usage", "output_tokens"))
			if v := num(path(d, "usage", "input_tokens")); v > inTok {
				inTok = v
			}
		case "message_stop":
			if state != "delta" {
				t.Errorf("message_stop in state %s", state)
			}
			state = "stopped"
		default:
			t.Errorf("unexpected event %q", e.event)
		}
	}
	if state != "stopped" {
		t.Errorf("stream did not end with message_stop: %v", names)
	}
	if text != "" {
		if sb.String() != text {
			t.Errorf("streamed text %q, want %q (events %v)", sb.String(), text, names)
		}
		if stop != "end_turn" {
			t.Errorf("stop_reason %q", stop)
		}
		if inTok != wantIn || outTok != wantOut {
			t.Errorf("stream usage in %v out %v, want %d/%d", inTok, outTok, wantIn, wantOut)
		}
	}
	return evs
}

func testStreams(t *testing.T, s *suite) {
	// include_usage: usage chunk only when asked, from every provider type.
	for _, p := range providerTypes {
		for _, inc := range []bool{true, false} {
			name := p.typ + "/include_usage=" + map[bool]string{true: "true", false: "false"}[inc]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				up := "st-" + p.typ + map[bool]string{true: "-u", false: "-n"}[inc]
				model := p.name + ":" + up
				body := chatBody(model, true)
				if inc {
					body["stream_options"] = map[string]any{"include_usage": true}
				}
				resp, raw := s.call("/v1/chat/completions", body)
				wantStatus(t, resp, raw, 200)
				checkChatStream(t, resp, raw, model, "Hello from "+up, inc)
				r := s.up.one(t, up)
				if p.typ != "anthropic" && path(r.JSON(), "stream_options", "include_usage") != true {
					t.Errorf("include_usage not sent upstream: %s", r.Body)
				}
			})
		}
	}

	// Streamed tool calls: indexes 0, 1 without gaps, id/type/name first,
	// arguments reassembled, from an OpenAI and an Anthropic upstream.
	for _, p := range providerTypes {
		t.Run("chat_tool_calls/"+p.typ, func(t *testing.T) {
			t.Parallel()
			model := p.name + ":stt-" + p.typ + "+tools"
			body := chatBody(model, true)
			body["tools"] = chatTools()
			resp, raw := s.call("/v1/chat/completions", body)
			wantStatus(t, resp, raw, 200)
			chunks := checkChatStream(t, resp, raw, model, "", false)
			type acc struct {
				id, typ, name string
				args          strings.Builder
			}
			var calls []*acc
			finish := ""
			for _, c := range chunks {
				if fr := str(path(c, "choices", 0, "finish_reason")); fr != "" {
					finish = fr
				}
				tcs, _ := path(c, "choices", 0, "delta", "tool_calls").([]any)
				for _, tc := range tcs {
					idx, ok := path(tc, "index").(float64)
					if !ok {
						t.Fatalf("tool call delta without index: %v", tc)
					}
					i := int(idx)
					if i > len(calls) {
						t.Fatalf("tool call index %d skips %d", i, len(calls))
					}
					if i == len(calls) {
						a := &acc{id: str(path(tc, "id")), typ: str(path(tc, "type")), name: str(path(tc, "function", "name"))}
						if a.id == "" || a.typ != "function" || a.name == "" {
							t.Errorf("first delta of call %d lacks id/type/name: %v", i, tc)
						}
						calls = append(calls, a)
					}
					calls[i].args.WriteString(str(path(tc, "function", "arguments")))
				}
			}
			if len(calls) != 2 {
				t.Fatalf("%d tool calls, want 2", len(calls))
			}
			if calls[0].name != "get_weather" || calls[1].name != "get_time" {
				t.Errorf("names %q %q", calls[0].name, calls[1].name)
			}
			jsonEq(t, parseJSONString(t, calls[0].args.String()), `{"location":"Paris, France","unit":"celsius"}`)
			jsonEq(t, parseJSONString(t, calls[1].args.String()), `{"timezone":"Europe/Paris"}`)
			if finish != "tool_calls" {
				t.Errorf("finish_reason %q", finish)
			}
		})
	}

	// A messages stream with tool calls served by an OpenAI-format upstream
	// (and the others) carries input_json_delta for the arguments.
	for _, p := range providerTypes {
		t.Run("messages_tool_use/"+p.typ, func(t *testing.T) {
			t.Parallel()
			model := p.name + ":smt-" + p.typ + "+tools"
			body := messagesBody(model, true)
			body["tools"] = messagesTools()
			resp, raw := s.call("/v1/messages", body)
			wantStatus(t, resp, raw, 200)
			evs := checkMessagesStream(t, resp, raw, model, "")
			type block struct {
				id, name string
				args     strings.Builder
			}
			var blocks []*block
			stop := ""
			for _, e := range evs {
				d := e.json(t)
				switch e.event {
				case "content_block_start":
					if path(d, "content_block", "type") == "tool_use" {
						jsonEq(t, path(d, "content_block", "input"), `{}`)
						blocks = append(blocks, &block{id: str(path(d, "content_block", "id")), name: str(path(d, "content_block", "name"))})
					}
				case "content_block_delta":
					if path(d, "delta", "type") == "input_json_delta" {
						if len(blocks) == 0 {
							t.Fatalf("input_json_delta before tool_use block")
						}
						blocks[len(blocks)-1].args.WriteString(str(path(d, "delta", "partial_json")))
					}
				case "message_delta":
					stop = str(path(d, "delta", "stop_reason"))
				}
			}
			if len(blocks) != 2 {
				t.Fatalf("%d tool_use blocks, want 2", len(blocks))
			}
			if blocks[0].name != "get_weather" || blocks[1].name != "get_time" || blocks[0].id == "" || blocks[1].id == "" {
				t.Errorf("blocks %q/%q ids %q/%q", blocks[0].name, blocks[1].name, blocks[0].id, blocks[1].id)
			}
			jsonEq(t, parseJSONString(t, blocks[0].args.String()), `{"location":"Paris, France","unit":"celsius"}`)
			jsonEq(t, parseJSONString(t, blocks[1].args.String()), `{"timezone":"Europe/Paris"}`)
			if stop != "tool_use" {
				t.Errorf("stop_reason %q", stop)
			}
		})
	}
}
