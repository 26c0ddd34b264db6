package messages

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/gateway/services/chat"
	"github.com/llmgw/gateway/services/sse"
)

var benchBody = func() []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"claude-x","max_tokens":1024,"temperature":0.2,"stream":true,"system":"You are a helpful assistant that answers briefly.","thinking":{"type":"enabled","budget_tokens":1024},"messages":[`)
	for i := range 10 {
		if i > 0 {
			sb.WriteString(",")
		}
		id := "toolu_" + string(rune('a'+i))
		sb.WriteString(`{"role":"user","content":"` + strings.Repeat("Tell me about the weather in Paris. ", 8) + `"}`)
		sb.WriteString(`,{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"` + id + `","name":"get_weather","input":{"city":"Paris","unit":"c"}}]}`)
		sb.WriteString(`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"{\"temp\":21,\"sky\":\"clear\"}"}]}`)
		sb.WriteString(`,{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("It is sunny and 21 degrees. ", 6) + `"}]}`)
	}
	sb.WriteString(`],"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}},
		{"name":"search","description":"Web search","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}],"tool_choice":{"type":"auto"}}`)
	return []byte(sb.String())
}()

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
		if _, err := EncodeRequest(req, "claude-x-20250101"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatEncodeFromMessages: a messages client served by OpenAI.
func BenchmarkChatEncodeFromMessages(b *testing.B) {
	req, err := DecodeRequest(benchBody)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chat.EncodeRequest(req, "gpt-4o"); err != nil {
			b.Fatal(err)
		}
	}
}

var benchStream = func() []byte {
	head := fixture[:strings.Index(fixture, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}")]
	var sb strings.Builder
	sb.WriteString(head)
	for range 200 {
		sb.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"token \"}}\n\n")
	}
	sb.WriteString(fixture[len(head):])
	return []byte(sb.String())
}()

// BenchmarkStreamTranslation: Anthropic SSE → canonical → messages SSE.
func BenchmarkStreamTranslation(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchStream)))
	for b.Loop() {
		if err := pipe(NewStreamDecoder(bytes.NewReader(benchStream)), NewStreamWriter(sse.NewWriter(io.Discard, nil), "alias")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamAnthropicToChat: Anthropic SSE → canonical → chat SSE.
func BenchmarkStreamAnthropicToChat(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchStream)))
	for b.Loop() {
		if err := pipe(NewStreamDecoder(bytes.NewReader(benchStream)), chat.NewStreamWriter(sse.NewWriter(io.Discard, nil), "alias", true)); err != nil {
			b.Fatal(err)
		}
	}
}
