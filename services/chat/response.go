package chat

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/wire"
)

type wireResponse struct {
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Created int64        `json:"created"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage"`
	Error   *wireError   `json:"error"`
}

type wireChoice struct {
	Message      wireRespMessage `json:"message"`
	FinishReason *string         `json:"finish_reason"`
}

type wireRespMessage struct {
	Content          json.RawMessage `json:"content"` // string, null, or (some servers) text parts
	Refusal          *string         `json:"refusal"`
	ReasoningContent *string         `json:"reasoning_content"` // DeepSeek and others
	Reasoning        *string         `json:"reasoning"`         // vLLM, OpenRouter
	ToolCalls        []wireRespCall  `json:"tool_calls"`
}

type wireRespCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *wireUsage) canonical() llm.Usage {
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	// prompt_tokens includes cached tokens; canonical InputTokens does not.
	in := u.PromptTokens - cached
	if in < 0 {
		in, cached = 0, u.PromptTokens
	}
	return llm.Usage{InputTokens: in, OutputTokens: u.CompletionTokens, CacheReadTokens: cached}
}

type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

func (e *wireError) upstream() *provider.UpstreamError {
	t := e.Type
	if t == "" && len(e.Code) > 0 && e.Code[0] == '"' {
		_ = json.Unmarshal(e.Code, &t)
	}
	return &provider.UpstreamError{Status: 0, Type: t, Message: e.Message}
}

// finishReason maps an OpenAI finish_reason; an unknown one is a normal stop.
func finishReason(s string) llm.FinishReason {
	switch s {
	case "length":
		return llm.FinishLength
	case "tool_calls", "function_call":
		return llm.FinishToolUse
	case "content_filter":
		return llm.FinishContentFilter
	}
	return llm.FinishStop
}

// DecodeResponse reads an upstream chat completion. Tool-call arguments that
// are not valid JSON (a model cut off mid-call) are kept verbatim as a JSON
// string value in ToolInput rather than dropped: a chat client gets them back
// unchanged, and nothing the model said is lost. An error object in a 2xx
// body is returned as *provider.UpstreamError; an unreadable body as
// *provider.MalformedError.
func DecodeResponse(body []byte) (*llm.Response, error) {
	var w wireResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, &provider.MalformedError{Err: err}
	}
	if w.Error != nil && len(w.Choices) == 0 {
		return nil, w.Error.upstream()
	}
	if len(w.Choices) == 0 {
		return nil, &provider.MalformedError{Err: errors.New("chat completion without choices")}
	}
	c := &w.Choices[0]
	resp := &llm.Response{ID: w.ID, Model: w.Model, Created: w.Created, FinishReason: llm.FinishStop}
	if c.FinishReason != nil {
		resp.FinishReason = finishReason(*c.FinishReason)
	}
	if w.Usage != nil {
		resp.Usage = w.Usage.canonical()
	}
	m := &c.Message
	if r := reasoning(m.ReasoningContent, m.Reasoning); r != "" {
		resp.Content = append(resp.Content, llm.Block{Type: llm.BlockThinking, Text: r})
	}
	text, err := contentText(m.Content)
	if err != nil {
		return nil, &provider.MalformedError{Err: err}
	}
	if text == "" && m.Refusal != nil {
		text = *m.Refusal
	}
	if text != "" || len(m.ToolCalls) == 0 {
		resp.Content = append(resp.Content, llm.Block{Type: llm.BlockText, Text: text})
	}
	for _, tc := range m.ToolCalls {
		id := tc.ID
		if id == "" {
			id = wire.NewID("call_")
		}
		resp.Content = append(resp.Content, llm.Block{Type: llm.BlockToolUse, ToolCallID: id,
			ToolName: tc.Function.Name, ToolInput: toolInput(tc.Function.Arguments)})
	}
	return resp, nil
}

func reasoning(a, b *string) string {
	if a != nil && *a != "" {
		return *a
	}
	if b != nil {
		return *b
	}
	return ""
}

// toolInput parses upstream arguments (see DecodeResponse).
func toolInput(args string) json.RawMessage {
	if in, ok := parseArguments(args); ok {
		return in
	}
	b, _ := json.Marshal(args)
	return b
}

// contentText reads a response content: a string, null, or text parts.
func contentText(raw json.RawMessage) (string, error) {
	if wire.IsNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

type outResponse struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []outChoice `json:"choices"`
	Usage   outUsage    `json:"usage"`
}

type outChoice struct {
	Index        int        `json:"index"`
	Message      outRespMsg `json:"message"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason string     `json:"finish_reason"`
}

type outRespMsg struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	Refusal   *string       `json:"refusal"`
	ToolCalls []outToolCall `json:"tool_calls,omitempty"`
}

type outUsage struct {
	PromptTokens        int          `json:"prompt_tokens"`
	CompletionTokens    int          `json:"completion_tokens"`
	TotalTokens         int          `json:"total_tokens"`
	PromptTokensDetails cachedTokens `json:"prompt_tokens_details"`
}

type cachedTokens struct {
	CachedTokens int `json:"cached_tokens"`
}

func usageOut(u llm.Usage) outUsage {
	return outUsage{PromptTokens: u.PromptTokens(), CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens(),
		PromptTokensDetails: cachedTokens{CachedTokens: u.CacheReadTokens}}
}

// finishOut maps a canonical finish reason to OpenAI's.
func finishOut(r llm.FinishReason) string {
	switch r {
	case llm.FinishLength:
		return "length"
	case llm.FinishToolUse:
		return "tool_calls"
	case llm.FinishContentFilter:
		return "content_filter"
	}
	return "stop" // stop, stop_sequence, pause_turn
}

// EncodeResponse renders resp as a chat completion; model is what the
// client sent. Every text block is concatenated (not only the first).
func EncodeResponse(resp *llm.Response, model string) ([]byte, error) {
	msg := outRespMsg{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, b := range resp.Content {
		switch b.Type {
		case llm.BlockText:
			text.WriteString(b.Text)
			hasText = true
		case llm.BlockToolUse:
			msg.ToolCalls = append(msg.ToolCalls, outToolCall{ID: b.ToolCallID, Type: "function",
				Function: outFunction{Name: b.ToolName, Arguments: arguments(b.ToolInput)}})
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	created := resp.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	out := outResponse{
		ID:      wire.WithPrefix("chatcmpl-", resp.ID),
		Object:  "chat.completion",
		Created: created,
		Model:   model,
		Choices: []outChoice{{Message: msg, FinishReason: finishOut(resp.FinishReason)}},
		Usage:   usageOut(resp.Usage),
	}
	return json.Marshal(&out)
}
