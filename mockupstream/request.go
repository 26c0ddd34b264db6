package mockupstream

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode"
)

// body is the part of a chat-completions or messages body the mock reads.
// Content stays raw because both formats allow a string or an array of parts.
type body struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	System              json.RawMessage `json:"system"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
}

// part is one content part in either format; Content is a tool_result's content.
type part struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
}

// includeUsage reports stream_options.include_usage.
func (b *body) includeUsage() bool { return b.StreamOptions != nil && b.StreamOptions.IncludeUsage }

// maxTokens is max_completion_tokens, else max_tokens, else 0 (no cap).
func (b *body) maxTokens() int {
	if b.MaxCompletionTokens != nil {
		return *b.MaxCompletionTokens
	}
	if b.MaxTokens != nil {
		return *b.MaxTokens
	}
	return 0
}

// inputTokens is the deterministic prompt size: whitespace-separated words
// of the system prompt and of every text in every message (string content,
// text parts, tool_result content). Tool definitions and tool-call arguments
// are not counted.
func (b *body) inputTokens() int {
	n := countRaw(b.System)
	for i := range b.Messages {
		n += countRaw(b.Messages[i].Content)
	}
	return n
}

// lastUserText is the text of the last user message, for "echo".
func (b *body) lastUserText() string {
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if b.Messages[i].Role != "user" {
			continue
		}
		var sb strings.Builder
		appendRawText(&sb, b.Messages[i].Content)
		return sb.String()
	}
	return ""
}

func countRaw(raw json.RawMessage) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		return countWords(s)
	case '[':
		var parts []part
		if json.Unmarshal(raw, &parts) != nil {
			return 0
		}
		n := 0
		for _, p := range parts {
			n += countWords(p.Text) + countRaw(p.Content)
		}
		return n
	}
	return 0
}

func appendRawText(sb *strings.Builder, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			sb.WriteString(s)
		}
	case '[':
		var parts []part
		if json.Unmarshal(raw, &parts) != nil {
			return
		}
		for _, p := range parts {
			if p.Type == "text" || p.Type == "" {
				if sb.Len() > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(p.Text)
			}
		}
	}
}

// countWords counts whitespace-separated words without allocating.
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// CountWords is the tokenizer the mock uses for usage: whitespace-separated
// words. Exported so tests can compute expected token counts.
func CountWords(s string) int { return countWords(s) }

// Request is one request the mock received, recorded in arrival order.
type Request struct {
	Method string
	Path   string
	Query  string // raw query
	Header http.Header
	Body   []byte // as received
	// Format is "openai", "azure" or "anthropic" (from the path).
	Format string
	// Model is the model the mock answered as (Azure: the deployment).
	Model string
}

// JSON is the body parsed into a generic map (nil if it is not a JSON object).
func (r Request) JSON() map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m
}
