// Package llm holds the canonical request, response and stream-event types that
// every client format decodes into and every provider client encodes from
// (hub and spoke: N formats + M providers need N+M converters, not N×M).
package llm

import "encoding/json"

// Format names a client-facing wire format.
type Format string

const (
	FormatChat      Format = "chat"      // OpenAI chat completions
	FormatMessages  Format = "messages"  // Anthropic messages
	FormatResponses Format = "responses" // the gateway's responses endpoint
)

// Role of a conversation turn. System text is hoisted into Request.System.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType is the kind of one content part.
type BlockType string

const (
	BlockText       BlockType = "text"
	BlockImage      BlockType = "image"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
	BlockThinking   BlockType = "thinking"
)

// Block is one content part of a message, in order.
type Block struct {
	Type BlockType `json:"type"`

	// Text is the text of a text block or the reasoning of a thinking block.
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"` // thinking

	// Image: either a URL (http(s) or data: URI) or base64 data with a media type.
	ImageURL  string `json:"image_url,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	ImageData string `json:"image_data,omitempty"`

	// tool_use (ToolCallID, ToolName, ToolInput) and tool_result (ToolCallID, Content, IsError).
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolName   string          `json:"tool_name,omitempty"`
	ToolInput  json.RawMessage `json:"tool_input,omitempty"` // a JSON object, never empty
	Content    []Block         `json:"content,omitempty"`    // tool_result content
	IsError    bool            `json:"is_error,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// Tool is a function the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON schema object
}

// ToolChoiceMode says how the model must use tools.
type ToolChoiceMode string

const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required" // Anthropic "any"
	ToolChoiceTool     ToolChoiceMode = "tool"     // a named tool
)

// ToolChoice is the canonical tool_choice.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode"`
	Name string         `json:"name,omitempty"` // when Mode is ToolChoiceTool
}

// Request is the canonical model request. Sampling parameters are pointers so
// that "unset" and "zero" stay distinct through translation.
type Request struct {
	// Model is the model string the client sent (alias or provider:model).
	Model    string    `json:"model"`
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`

	MaxTokens         *int        `json:"max_tokens,omitempty"`
	Temperature       *float64    `json:"temperature,omitempty"`
	TopP              *float64    `json:"top_p,omitempty"`
	TopK              *int        `json:"top_k,omitempty"`
	Stop              []string    `json:"stop,omitempty"`
	Tools             []Tool      `json:"tools,omitempty"`
	ToolChoice        *ToolChoice `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool       `json:"parallel_tool_calls,omitempty"`
	User              string      `json:"user,omitempty"`

	Stream bool `json:"stream,omitempty"`
	// IncludeUsage: the client asked for the chat usage chunk
	// (stream_options.include_usage). Upstreams are always asked for usage.
	IncludeUsage bool `json:"include_usage,omitempty"`

	// Format is the wire format the client spoke.
	Format Format `json:"format"`
	// Extra holds top-level fields of the client body the gateway does not
	// interpret; they are forwarded unchanged to an upstream of the same format.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// FinishReason is the canonical reason generation stopped.
type FinishReason string

const (
	FinishStop          FinishReason = "stop"           // end_turn / stop
	FinishStopSequence  FinishReason = "stop_sequence"  // a stop sequence matched
	FinishLength        FinishReason = "length"         // max_tokens / context window
	FinishToolUse       FinishReason = "tool_use"       // tool_calls
	FinishContentFilter FinishReason = "content_filter" // refusal
	FinishPauseTurn     FinishReason = "pause_turn"
)

// Usage counts tokens. InputTokens excludes cache tokens (Anthropic's
// convention); PromptTokens gives the OpenAI-style total.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// PromptTokens is every input token, cached or not.
func (u Usage) PromptTokens() int { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// TotalTokens is prompt plus output tokens.
func (u Usage) TotalTokens() int { return u.PromptTokens() + u.OutputTokens }

// Response is the canonical non-streaming reply.
type Response struct {
	ID           string       `json:"id"`
	Model        string       `json:"model"` // upstream model that answered
	Created      int64        `json:"created"`
	Content      []Block      `json:"content"` // assistant blocks in order
	FinishReason FinishReason `json:"finish_reason"`
	StopSequence string       `json:"stop_sequence,omitempty"`
	Usage        Usage        `json:"usage"`
}

// EventType is one of a closed set of stream events.
type EventType string

const (
	// EventStart opens the reply: ID, Model, and Usage with input tokens when known.
	EventStart EventType = "start"
	// EventBlockStart opens content block Index; Block carries its type and,
	// for tool_use, ToolCallID and ToolName (ToolInput empty).
	EventBlockStart EventType = "block_start"
	// EventDelta extends block Index with Text (text, thinking), PartialJSON
	// (tool_use arguments) or Signature (thinking).
	EventDelta EventType = "delta"
	// EventBlockStop closes block Index.
	EventBlockStop EventType = "block_stop"
	// EventEnd closes the reply: FinishReason, StopSequence and cumulative Usage.
	EventEnd EventType = "end"
)

// Event is one canonical stream event. Blocks are opened, extended and closed
// in order; indexes start at 0 without gaps.
type Event struct {
	Type         EventType    `json:"type"`
	ID           string       `json:"id,omitempty"`
	Model        string       `json:"model,omitempty"`
	Index        int          `json:"index"`
	Block        *Block       `json:"block,omitempty"`
	Text         string       `json:"text,omitempty"`
	PartialJSON  string       `json:"partial_json,omitempty"`
	Signature    string       `json:"signature,omitempty"`
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	StopSequence string       `json:"stop_sequence,omitempty"`
	Usage        *Usage       `json:"usage,omitempty"`
}

// Stream is a pull-style upstream stream, like sql.Rows: Next returns io.EOF
// after a clean end (after EventEnd); any other error means the stream broke.
// Close is always called, releases the upstream body and cancels the call.
type Stream interface {
	Next() (Event, error)
	Close() error
}
