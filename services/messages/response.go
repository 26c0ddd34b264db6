package messages

import (
	"encoding/json"

	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/wire"
)

type wireResponse struct {
	Type         string      `json:"type"`
	ID           string      `json:"id"`
	Model        string      `json:"model"`
	Content      []respBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        wireUsage   `json:"usage"`
	Error        *wireError  `json:"error"`
}

type respBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
}

// wireUsage has pointers so a message_delta can say which counts it carries
// (set those, keep the others).
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
}

// apply sets every count u carries; Anthropic's counts are cumulative, so
// they are never added.
func (u *wireUsage) apply(to *llm.Usage) {
	if u.InputTokens != nil {
		to.InputTokens = *u.InputTokens
	}
	if u.OutputTokens != nil {
		to.OutputTokens = *u.OutputTokens
	}
	if u.CacheReadInputTokens != nil {
		to.CacheReadTokens = *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		to.CacheWriteTokens = *u.CacheCreationInputTokens
	}
}

type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// stopReason maps Anthropic's stop_reason; an unknown one is a normal stop.
func stopReason(s string) llm.FinishReason {
	switch s {
	case "stop_sequence":
		return llm.FinishStopSequence
	case "pause_turn":
		return llm.FinishPauseTurn
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "tool_use":
		return llm.FinishToolUse
	case "refusal":
		return llm.FinishContentFilter
	}
	return llm.FinishStop
}

func stopReasonOut(r llm.FinishReason) string {
	switch r {
	case llm.FinishStopSequence:
		return "stop_sequence"
	case llm.FinishPauseTurn:
		return "pause_turn"
	case llm.FinishLength:
		return "max_tokens"
	case llm.FinishToolUse:
		return "tool_use"
	case llm.FinishContentFilter:
		return "refusal"
	}
	return "end_turn"
}

// DecodeResponse reads an upstream Anthropic message. Block types the
// canonical form cannot carry (server tool results, redacted thinking) are
// left out. An error body is *provider.UpstreamError, an unreadable one
// *provider.MalformedError.
func DecodeResponse(body []byte) (*llm.Response, error) {
	var w wireResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, &provider.MalformedError{Err: err}
	}
	if w.Type == "error" && w.Error != nil {
		return nil, &provider.UpstreamError{Type: w.Error.Type, Message: w.Error.Message}
	}
	resp := &llm.Response{ID: w.ID, Model: w.Model, Content: make([]llm.Block, 0, len(w.Content)), FinishReason: llm.FinishStop}
	if w.StopReason != nil {
		resp.FinishReason = stopReason(*w.StopReason)
	}
	if w.StopSequence != nil {
		resp.StopSequence = *w.StopSequence
	}
	w.Usage.apply(&resp.Usage)
	for _, b := range w.Content {
		switch b.Type {
		case "text":
			resp.Content = append(resp.Content, llm.Block{Type: llm.BlockText, Text: b.Text})
		case "tool_use":
			resp.Content = append(resp.Content, llm.Block{Type: llm.BlockToolUse, ToolCallID: b.ID, ToolName: b.Name, ToolInput: objectInput(b.Input)})
		case "thinking":
			resp.Content = append(resp.Content, llm.Block{Type: llm.BlockThinking, Text: b.Thinking, Signature: b.Signature})
		}
	}
	return resp, nil
}

type outResponse struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Content      []outBlock `json:"content"`
	Model        string     `json:"model"`
	StopReason   string     `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        outUsage   `json:"usage"`
}

type outUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// EncodeResponse renders resp as an Anthropic message; model is what the
// client sent. Usage is the canonical split as is: input_tokens excludes
// cache reads whichever upstream answered.
func EncodeResponse(resp *llm.Response, model string) ([]byte, error) {
	out := outResponse{
		ID:         wire.WithPrefix("msg_", resp.ID),
		Type:       "message",
		Role:       "assistant",
		Content:    make([]outBlock, 0, len(resp.Content)),
		Model:      model,
		StopReason: stopReasonOut(resp.FinishReason),
		Usage: outUsage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
			CacheReadInputTokens: resp.Usage.CacheReadTokens, CacheCreationInputTokens: resp.Usage.CacheWriteTokens},
	}
	if resp.FinishReason == llm.FinishStopSequence && resp.StopSequence != "" {
		out.StopSequence = &resp.StopSequence
	}
	for i := range resp.Content {
		b := &resp.Content[i]
		switch b.Type {
		case llm.BlockText:
			out.Content = append(out.Content, outBlock{Type: "text", Text: &b.Text})
		case llm.BlockToolUse:
			// objectInput: a client replays this block, and a non-object input
			// would fail that next request.
			out.Content = append(out.Content, outBlock{Type: "tool_use", ID: b.ToolCallID, Name: b.ToolName, Input: objectInput(b.ToolInput)})
		case llm.BlockThinking:
			out.Content = append(out.Content, outBlock{Type: "thinking", Thinking: &b.Text, Signature: &b.Signature})
		}
	}
	return json.Marshal(&out)
}
