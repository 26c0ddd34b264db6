package chat

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/sse"
)

// benchBody is a mid-sized agent turn: system, history, tool calls and
// results, two tools, pass-through fields.
var benchBody = func() []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"gpt-4o","temperature":0.2,"max_tokens":1024,"stream":true,"stream_options":{"include_usage":true},"seed":1,"messages":[{"role":"system","content":"You are a helpful assistant that answers briefly."}`)
	for i := range 10 {
		sb.WriteString(`,{"role":"user","content":"` + strings.Repeat("Tell me about the weather in Paris. ", 8) + `"}`)
		sb.WriteString(`,{"role":"assistant","content":null,"tool_calls":[{"id":"call_` + string(rune('a'+i)) + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"c\"}"}}]}`)
		sb.WriteString(`,{"role":"tool","tool_call_id":"call_` + string(rune('a'+i)) + `","content":"{\"temp\":21,\"sky\":\"clear\"}"}`)
		sb.WriteString(`,{"role":"assistant","content":"` + strings.Repeat("It is sunny and 21 degrees. ", 6) + `"}`)
	}
	sb.WriteString(`],"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}},
		{"type":"function","function":{"name":"search","description":"Web search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}],"tool_choice":"auto"}`)
	return []byte(sb.String())
}()

// BenchmarkBaselineUnmarshalAny is the yardstick: a generic decode of the
// same body into map[string]any, which does no validation at all.
func BenchmarkBaselineUnmarshalAny(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		var v map[string]any
		if err := json.Unmarshal(benchBody, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		if _, err := DecodeRequest(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRequest(b *testing.B) {
	req, err := DecodeRequest(benchBody)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeRequest(req, "gpt-4o-2024-08-06"); err != nil {
			b.Fatal(err)
		}
	}
}

// benchStream is a 200-token text reply followed by the tool-call fixture.
var benchStream = func() []byte {
	var sb strings.Builder
	for range 200 {
		sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"token "},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	}
	return []byte(sb.String() + fixtureTools)
}()

// BenchmarkStreamTranslation: upstream OpenAI SSE → canonical → chat SSE.
func BenchmarkStreamTranslation(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchStream)))
	for b.Loop() {
		d := NewStreamDecoder(bytes.NewReader(benchStream))
		w := NewStreamWriter(sse.NewWriter(io.Discard, nil), "alias", true)
		for {
			ev, err := d.Next()
			if err != nil {
				break
			}
			if ev.Type == llm.EventEnd {
				_ = w.Write(ev)
				break
			}
			_ = w.Write(ev)
		}
	}
}
