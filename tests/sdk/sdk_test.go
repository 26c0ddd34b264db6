// Package sdk_test drives the gateway with the official OpenAI and Anthropic
// Go SDKs as clients, against the mock upstream, with every case served once
// by an openai provider and once by an anthropic provider: whatever the
// gateway translates must still parse in the SDK the client uses.
package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	antoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	oaioption "github.com/openai/openai-go/option"

	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/tests/testenv"
)

// upstreamModel is what each provider's aliases point at.
var upstreamModel = map[string]string{"oai": "gpt-4o", "ant": "claude-sonnet-4"}

// providers are the two provider types that serve every case.
var providers = []string{"oai", "ant"}

// fixture is one gateway with both providers, their aliases and a key.
type fixture struct {
	env    *testenv.Env
	mock   *mockupstream.Server
	key    string
	keyID  string
	oai    openai.Client
	ant    anthropic.Client
	ctx    context.Context
	cancel context.CancelFunc
}

// alias names: <provider>-<variant>; variants map to mock directives.
var variants = map[string]string{
	"plain": "",
	"tools": "+tools",
	"500":   "+fail-500",
	"400":   "+fail-400",
}

func alias(provider, variant string) string { return provider + "-" + variant }

func setup(t *testing.T, env *testenv.Env) *fixture {
	t.Helper()
	mock := mockupstream.New()
	t.Cleanup(mock.Close)
	env.MustAdmin(201, "POST", "/admin/providers", map[string]any{
		"name": "oai", "type": "openai", "api_base": mock.URL() + "/v1", "api_key": "sk-up"})
	env.MustAdmin(201, "POST", "/admin/providers", map[string]any{
		"name": "ant", "type": "anthropic", "api_base": mock.URL(), "api_key": "sk-up"})
	for _, p := range providers {
		for v, dir := range variants {
			env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{
				"alias": alias(p, v), "provider": p, "model": upstreamModel[p] + dir})
		}
	}
	k := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "sdk"})
	f := &fixture{env: env, mock: mock, key: k["key"].(string), keyID: k["id"].(string)}
	f.oai = newOpenAI(env, f.key)
	f.ant = newAnthropic(env, f.key)
	f.ctx, f.cancel = context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(f.cancel)
	return f
}

func newOpenAI(env *testenv.Env, key string) openai.Client {
	return openai.NewClient(
		oaioption.WithBaseURL(env.BaseURL+"/v1"),
		oaioption.WithAPIKey(key),
		oaioption.WithMaxRetries(0),
		oaioption.WithHTTPClient(env.Client),
	)
}

func newAnthropic(env *testenv.Env, key string) anthropic.Client {
	return anthropic.NewClient(
		antoption.WithBaseURL(env.BaseURL),
		antoption.WithAPIKey(key),
		antoption.WithMaxRetries(0),
		antoption.WithHTTPClient(env.Client),
	)
}

// eachProvider runs fn as a subtest per provider.
func eachProvider(t *testing.T, fn func(t *testing.T, p string)) {
	for _, p := range providers {
		t.Run(p, func(t *testing.T) { fn(t, p) })
	}
}

// run starts one gateway per database and runs the cases against it.
func run(t *testing.T, fn func(t *testing.T, f *fixture)) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		fn(t, setup(t, env))
	})
}

// ---- OpenAI chat completions ----

func chatParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"),
			openai.UserMessage("say hello to me"),
		},
		MaxTokens: openai.Int(64),
	}
}

var weatherTools = []openai.ChatCompletionToolParam{
	{Function: openai.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("weather at a location"),
		Parameters: openai.FunctionParameters{
			"type": "object",
			"properties": map[string]any{
				"location": map[string]any{"type": "string"},
				"unit":     map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			},
			"required": []string{"location"},
		},
	}},
	{Function: openai.FunctionDefinitionParam{
		Name: "get_time",
		Parameters: openai.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"timezone": map[string]any{"type": "string"}},
		},
	}},
}

// wantToolArgs are the mock's tool calls, by name.
var wantToolArgs = map[string]map[string]any{
	"get_weather": {"location": "Paris, France", "unit": "celsius"},
	"get_time":    {"timezone": "Europe/Paris"},
}

func checkArgs(t *testing.T, name, args string) {
	t.Helper()
	want, ok := wantToolArgs[name]
	if !ok {
		t.Errorf("unexpected tool %q", name)
		return
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(args), &got); err != nil {
		t.Errorf("%s: arguments %q not JSON: %v", name, args, err)
		return
	}
	if len(got) != len(want) {
		t.Errorf("%s: arguments %v, want %v", name, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: arguments %v, want %v", name, got, want)
		}
	}
}

func TestOpenAIChat(t *testing.T) {
	run(t, func(t *testing.T, f *fixture) {
		eachProvider(t, func(t *testing.T, p string) {
			t.Run("plain", func(t *testing.T) {
				c, err := f.oai.Chat.Completions.New(f.ctx, chatParams(alias(p, "plain")))
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Choices) != 1 {
					t.Fatalf("%d choices", len(c.Choices))
				}
				ch := c.Choices[0]
				if want := "Hello from " + upstreamModel[p]; ch.Message.Content != want {
					t.Errorf("content %q, want %q", ch.Message.Content, want)
				}
				if ch.FinishReason != "stop" || ch.Message.Role != "assistant" {
					t.Errorf("finish_reason %q role %q", ch.FinishReason, ch.Message.Role)
				}
				if c.ID == "" || c.Object != "chat.completion" || c.Model == "" {
					t.Errorf("id %q object %q model %q", c.ID, c.Object, c.Model)
				}
				u := c.Usage
				if u.PromptTokens <= 0 || u.CompletionTokens != 3 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
					t.Errorf("usage %+v", u)
				}
			})
			t.Run("stream", func(t *testing.T) {
				params := chatParams(alias(p, "plain"))
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				stream := f.oai.Chat.Completions.NewStreaming(f.ctx, params)
				acc := openai.ChatCompletionAccumulator{}
				chunks, finished := 0, ""
				for stream.Next() {
					acc.AddChunk(stream.Current())
					chunks++
					if s, ok := acc.JustFinishedContent(); ok {
						finished = s
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				_ = stream.Close()
				want := "Hello from " + upstreamModel[p]
				if chunks < 2 || len(acc.Choices) != 1 {
					t.Fatalf("%d chunks, %d choices", chunks, len(acc.Choices))
				}
				if got := acc.Choices[0].Message.Content; got != want {
					t.Errorf("content %q, want %q", got, want)
				}
				if finished != "" && finished != want {
					t.Errorf("JustFinishedContent %q", finished)
				}
				if acc.Choices[0].FinishReason != "stop" {
					t.Errorf("finish_reason %q", acc.Choices[0].FinishReason)
				}
				u := acc.Usage
				if u.PromptTokens <= 0 || u.CompletionTokens != 3 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
					t.Errorf("usage %+v", u)
				}
			})
			t.Run("tools", func(t *testing.T) {
				params := chatParams(alias(p, "tools"))
				params.Tools = weatherTools
				c, err := f.oai.Chat.Completions.New(f.ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				ch := c.Choices[0]
				if ch.FinishReason != "tool_calls" {
					t.Errorf("finish_reason %q", ch.FinishReason)
				}
				calls := ch.Message.ToolCalls
				if len(calls) != 2 || calls[0].Function.Name != "get_weather" || calls[1].Function.Name != "get_time" {
					t.Fatalf("tool calls %+v", calls)
				}
				for _, tc := range calls {
					if tc.ID == "" || tc.Type != "function" {
						t.Errorf("tool call id %q type %q", tc.ID, tc.Type)
					}
					checkArgs(t, tc.Function.Name, tc.Function.Arguments)
				}
				if c.Usage.CompletionTokens != 2*mockupstream.ToolCallOutputTokens {
					t.Errorf("usage %+v", c.Usage)
				}
			})
			t.Run("tools stream", func(t *testing.T) {
				params := chatParams(alias(p, "tools"))
				params.Tools = weatherTools
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				stream := f.oai.Chat.Completions.NewStreaming(f.ctx, params)
				acc := openai.ChatCompletionAccumulator{}
				var justFinished []string
				for stream.Next() {
					acc.AddChunk(stream.Current())
					if tc, ok := acc.JustFinishedToolCall(); ok {
						justFinished = append(justFinished, tc.Name)
						checkArgs(t, tc.Name, tc.Arguments)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				_ = stream.Close()
				if len(acc.Choices) != 1 {
					t.Fatalf("%d choices", len(acc.Choices))
				}
				ch := acc.Choices[0]
				if ch.FinishReason != "tool_calls" {
					t.Errorf("finish_reason %q", ch.FinishReason)
				}
				calls := ch.Message.ToolCalls
				if len(calls) != 2 || calls[0].Function.Name != "get_weather" || calls[1].Function.Name != "get_time" {
					t.Fatalf("tool calls %+v", calls)
				}
				for _, tc := range calls {
					if tc.ID == "" {
						t.Errorf("tool call without id: %+v", tc)
					}
					checkArgs(t, tc.Function.Name, tc.Function.Arguments)
				}
				// JustFinishedToolCall reports a call when the next one (or the
				// finish) starts; at least the first must have been reported.
				if len(justFinished) == 0 || justFinished[0] != "get_weather" {
					t.Errorf("JustFinishedToolCall saw %v", justFinished)
				}
				if acc.Usage.CompletionTokens != 2*mockupstream.ToolCallOutputTokens {
					t.Errorf("usage %+v", acc.Usage)
				}
			})
		})
	})
}

// ---- Anthropic messages ----

func messageParams(model string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 64,
		System:    []anthropic.TextBlockParam{{Text: "be brief"}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("say hello to me"))},
	}
}

var messageTools = []anthropic.ToolUnionParam{
	{OfTool: &anthropic.ToolParam{
		Name:        "get_weather",
		Description: anthropic.String("weather at a location"),
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{
				"location": map[string]any{"type": "string"},
				"unit":     map[string]any{"type": "string"},
			},
			Required: []string{"location"},
		},
	}},
	{OfTool: &anthropic.ToolParam{
		Name:        "get_time",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"timezone": map[string]any{"type": "string"}}},
	}},
}

func checkTextMessage(t *testing.T, p string, m *anthropic.Message) {
	t.Helper()
	want := "Hello from " + upstreamModel[p]
	if len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text != want {
		t.Fatalf("content %+v, want one text block %q", m.Content, want)
	}
	if m.StopReason != anthropic.StopReasonEndTurn || m.Role != "assistant" {
		t.Errorf("stop_reason %q role %q", m.StopReason, m.Role)
	}
	if m.ID == "" || m.Type != "message" || m.Model == "" {
		t.Errorf("id %q type %q model %q", m.ID, m.Type, m.Model)
	}
	if m.Usage.InputTokens <= 0 || m.Usage.OutputTokens != 3 {
		t.Errorf("usage %+v", m.Usage)
	}
}

func checkToolMessage(t *testing.T, m *anthropic.Message) {
	t.Helper()
	if m.StopReason != anthropic.StopReasonToolUse {
		t.Errorf("stop_reason %q", m.StopReason)
	}
	var names []string
	for _, b := range m.Content {
		switch b.Type {
		case "tool_use":
			names = append(names, b.Name)
			if b.ID == "" {
				t.Errorf("tool_use without id: %+v", b)
			}
			tu := b.AsToolUse()
			checkArgs(t, tu.Name, string(tu.Input))
		case "text":
			// A provider may lead with text; the mock does not, but it is legal.
		default:
			t.Errorf("unexpected block %q", b.Type)
		}
	}
	if strings.Join(names, ",") != "get_weather,get_time" {
		t.Errorf("tool_use blocks %v", names)
	}
	if m.Usage.OutputTokens != 2*mockupstream.ToolCallOutputTokens {
		t.Errorf("usage %+v", m.Usage)
	}
}

func accumulate(t *testing.T, f *fixture, params anthropic.MessageNewParams) *anthropic.Message {
	t.Helper()
	stream := f.ant.Messages.NewStreaming(f.ctx, params)
	m := anthropic.Message{}
	events := map[string]int{}
	for stream.Next() {
		ev := stream.Current()
		events[ev.Type]++
		if err := m.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	_ = stream.Close()
	for _, typ := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"} {
		if events[typ] == 0 {
			t.Errorf("no %s event (saw %v)", typ, events)
		}
	}
	return &m
}

func TestAnthropicMessages(t *testing.T) {
	run(t, func(t *testing.T, f *fixture) {
		eachProvider(t, func(t *testing.T, p string) {
			t.Run("plain", func(t *testing.T) {
				m, err := f.ant.Messages.New(f.ctx, messageParams(alias(p, "plain")))
				if err != nil {
					t.Fatal(err)
				}
				checkTextMessage(t, p, m)
			})
			t.Run("stream", func(t *testing.T) {
				checkTextMessage(t, p, accumulate(t, f, messageParams(alias(p, "plain"))))
			})
			t.Run("tools", func(t *testing.T) {
				params := messageParams(alias(p, "tools"))
				params.Tools = messageTools
				m, err := f.ant.Messages.New(f.ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				checkToolMessage(t, m)
			})
			t.Run("tools stream", func(t *testing.T) {
				params := messageParams(alias(p, "tools"))
				params.Tools = messageTools
				checkToolMessage(t, accumulate(t, f, params))
			})
		})
	})
}

// ---- errors ----

// errCase is a request that must fail with status in both SDKs.
type errCase struct {
	name   string
	model  func(p string) string
	key    string // "" = the fixture's key
	status int
}

// checkEnvelope: the SDK error carries the gateway's documented error
// envelope ({"detail":{"error":{type,message,details}}}), which is not the
// vendors' shape, so openai.Error.Message stays empty; the status is what
// the SDKs act on.
func checkEnvelope(t *testing.T, dump []byte) {
	t.Helper()
	if i := bytes.Index(dump, []byte("\r\n\r\n")); i >= 0 {
		dump = dump[i+4:]
	}
	var env struct {
		Detail struct {
			Error *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(dump, &env); err != nil || env.Detail.Error == nil || env.Detail.Error.Type == "" || env.Detail.Error.Message == "" {
		t.Errorf("error body is not the gateway envelope: %q", dump)
	}
}

func openaiStatus(t *testing.T, err error) int {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *openai.Error", err, err)
	}
	checkEnvelope(t, e.DumpResponse(true))
	return e.StatusCode
}

func anthropicStatus(t *testing.T, err error) int {
	t.Helper()
	var e *anthropic.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *anthropic.Error", err, err)
	}
	checkEnvelope(t, e.DumpResponse(true))
	return e.StatusCode
}

func TestErrors(t *testing.T) {
	run(t, func(t *testing.T, f *fixture) {
		cases := []errCase{
			{name: "unknown model", model: func(string) string { return "no-such-model" }, status: 404},
			{name: "bad key", model: func(p string) string { return alias(p, "plain") }, key: "sk-gw-" + strings.Repeat("x", 40), status: 401},
			{name: "upstream 500", model: func(p string) string { return alias(p, "500") }, status: 502},
			{name: "upstream 400", model: func(p string) string { return alias(p, "400") }, status: 400},
		}
		check := func(t *testing.T, tc errCase, key string) {
			eachProvider(t, func(t *testing.T, p string) {
				oai, ant := f.oai, f.ant
				if key != f.key {
					oai, ant = newOpenAI(f.env, key), newAnthropic(f.env, key)
				}
				model := tc.model(p)
				t.Run("openai", func(t *testing.T) {
					_, err := oai.Chat.Completions.New(f.ctx, chatParams(model))
					if err == nil {
						t.Fatal("no error")
					}
					if got := openaiStatus(t, err); got != tc.status {
						t.Errorf("status %d, want %d: %v", got, tc.status, err)
					}
				})
				t.Run("openai stream", func(t *testing.T) {
					stream := oai.Chat.Completions.NewStreaming(f.ctx, chatParams(model))
					for stream.Next() {
					}
					err := stream.Err()
					_ = stream.Close()
					if err == nil {
						t.Fatal("no error")
					}
					if got := openaiStatus(t, err); got != tc.status {
						t.Errorf("status %d, want %d: %v", got, tc.status, err)
					}
				})
				t.Run("anthropic", func(t *testing.T) {
					_, err := ant.Messages.New(f.ctx, messageParams(model))
					if err == nil {
						t.Fatal("no error")
					}
					if got := anthropicStatus(t, err); got != tc.status {
						t.Errorf("status %d, want %d: %v", got, tc.status, err)
					}
				})
				t.Run("anthropic stream", func(t *testing.T) {
					stream := ant.Messages.NewStreaming(f.ctx, messageParams(model))
					for stream.Next() {
					}
					err := stream.Err()
					_ = stream.Close()
					if err == nil {
						t.Fatal("no error")
					}
					if got := anthropicStatus(t, err); got != tc.status {
						t.Errorf("status %d, want %d: %v", got, tc.status, err)
					}
				})
			})
		}
		for _, tc := range cases {
			key := tc.key
			if key == "" {
				key = f.key
			}
			t.Run(tc.name, func(t *testing.T) { check(t, tc, key) })
		}
		// Last: disabling the key turns every request into 403.
		f.env.MustAdmin(200, "PUT", "/admin/keys/"+f.keyID, map[string]any{"enabled": false})
		t.Run("disabled key", func(t *testing.T) {
			check(t, errCase{model: func(p string) string { return alias(p, "plain") }, status: 403}, f.key)
		})
	})
}
