// Package chat speaks the OpenAI chat-completions wire format in both roles:
// as the client-facing /v1/chat/completions format (decode and validate a
// request, encode a response and a stream) and as the upstream format of
// OpenAI-compatible providers (encode a request, decode a response and a
// stream). Everything here is a pure translation to and from the canonical
// llm types: no HTTP, no logging.
package chat

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/wire"
)

// wireRequest is the client body. Scalars are opt* types and polymorphic
// fields raw, so one json.Unmarshal never stops at a wrong type and the
// validation below can list every bad field with its path.
type wireRequest struct {
	Model               wire.OptString      `json:"model"`
	Messages            []wireMessage       `json:"messages"`
	Temperature         wire.OptNumber      `json:"temperature"`
	TopP                wire.OptNumber      `json:"top_p"`
	MaxTokens           wire.OptNumber      `json:"max_tokens"`
	MaxCompletionTokens wire.OptNumber      `json:"max_completion_tokens"`
	Stream              wire.OptBool        `json:"stream"`
	StreamOptions       json.RawMessage     `json:"stream_options"`
	Tools               wire.List[wireTool] `json:"tools"`
	ToolChoice          json.RawMessage     `json:"tool_choice"`
	Stop                json.RawMessage     `json:"stop"`
	User                wire.OptString      `json:"user"`
	ParallelToolCalls   wire.OptBool        `json:"parallel_tool_calls"`
}

// knownKey says which top-level fields the gateway interprets; the rest go
// to Request.Extra. max_completion_tokens is read into MaxTokens but also
// kept in Extra, so a chat upstream receives the parameter name the client
// chose (o-series models reject max_tokens).
func knownKey(k string) bool {
	switch k {
	case "model", "messages", "temperature", "top_p", "max_tokens", "stream", "stream_options",
		"tools", "tool_choice", "stop", "user", "parallel_tool_calls":
		return true
	}
	return false
}

type wireMessage struct {
	Role       wire.OptString          `json:"role"`
	Content    content                 `json:"content"`
	ToolCalls  wire.List[wireToolCall] `json:"tool_calls"`
	ToolCallID wire.OptString          `json:"tool_call_id"`
	notObject  bool                    // set by the slow path when the element is not an object
}

// content is a message content: a string or an array of parts.
type content = wire.Content[wirePart]

type wirePart struct {
	Type     wire.OptString  `json:"type"`
	Text     wire.OptString  `json:"text"`
	Refusal  wire.OptString  `json:"refusal"`
	ImageURL json.RawMessage `json:"image_url"`
}

type wireToolCall struct {
	ID       wire.OptString    `json:"id"`
	Type     wire.OptString    `json:"type"`
	Function *wireFunctionCall `json:"function"`
}

type wireFunctionCall struct {
	Name      wire.OptString `json:"name"`
	Arguments wire.OptString `json:"arguments"`
}

type wireTool struct {
	Type     wire.OptString `json:"type"`
	Function *wireFunction  `json:"function"`
}

type wireFunction struct {
	Name        wire.OptString  `json:"name"`
	Description wire.OptString  `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// DecodeRequest parses and validates a /v1/chat/completions body. Errors are
// *apierr.Error (400 invalid_request_error) listing every bad field.
func DecodeRequest(body []byte) (*llm.Request, error) {
	var w wireRequest
	var errs wire.FieldErrs
	typeErr, err := wire.Unmarshal(body, &w)
	if err != nil {
		return nil, err
	}
	// Only messages is a typed array of objects; find the culprits.
	messagesBad := typeErr && markMessages(body, &w)
	req := &llm.Request{Format: llm.FormatChat, Model: errs.Model(w.Model)}
	switch {
	case messagesBad:
		errs.Add("messages", "must be an array")
	case w.Messages == nil:
		errs.Add("messages", "is required")
	case len(w.Messages) == 0:
		errs.Add("messages", "must not be empty")
	}
	req.Messages, req.System = decodeMessages(w.Messages, &errs)

	req.Temperature = errs.Number("temperature", w.Temperature, 0, 2)
	req.TopP = errs.Number("top_p", w.TopP, 0, 1)
	req.MaxTokens = errs.Integer("max_tokens", w.MaxTokens, 1)
	if mct := errs.Integer("max_completion_tokens", w.MaxCompletionTokens, 1); mct != nil {
		req.MaxTokens = mct
	}
	if w.Stream.Bad {
		errs.Add("stream", "must be a boolean")
	}
	req.Stream = w.Stream.V
	if !wire.IsNull(w.StreamOptions) {
		var so struct {
			IncludeUsage wire.OptBool `json:"include_usage"`
		}
		if errs.DecodeElem("stream_options", w.StreamOptions, &so) {
			if so.IncludeUsage.Bad {
				errs.Add("stream_options.include_usage", "must be a boolean")
			}
			req.IncludeUsage = req.Stream && so.IncludeUsage.V
		}
	}
	req.Tools = decodeTools(w.Tools, &errs)
	req.ToolChoice = decodeToolChoice(w.ToolChoice, &errs)
	req.Stop = decodeStop(w.Stop, &errs)
	if w.User.Bad {
		errs.Add("user", "must be a string")
	}
	req.User = w.User.V
	if w.ParallelToolCalls.Bad {
		errs.Add("parallel_tool_calls", "must be a boolean")
	} else if w.ParallelToolCalls.Set {
		v := w.ParallelToolCalls.V
		req.ParallelToolCalls = &v
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	req.Extra = wire.Extras(body, knownKey)
	return req, nil
}

// markMessages runs only for a body with a type error: encoding/json has
// filled everything else as best it could, and this finds which part of
// messages was not an array of objects.
func markMessages(body []byte, w *wireRequest) (notArray bool) {
	var probe struct {
		Messages json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &probe)
	if wire.IsNull(probe.Messages) {
		return false
	}
	var elems []json.RawMessage
	if probe.Messages[0] != '[' || json.Unmarshal(probe.Messages, &elems) != nil {
		w.Messages = nil
		return true
	}
	for i, el := range elems {
		if el[0] != '{' && el[0] != 'n' && i < len(w.Messages) {
			w.Messages[i].notObject = true
		}
	}
	return false
}

func decodeMessages(in []wireMessage, errs *wire.FieldErrs) ([]llm.Message, string) {
	out := make([]llm.Message, 0, len(in))
	var system []string
	lastTool := false // the previous message became tool results
	for i := range in {
		m := &in[i]
		path := "messages[" + strconv.Itoa(i) + "]"
		if m.notObject {
			errs.Add(path, "must be an object")
			continue
		}
		role := m.Role.V
		switch {
		case !m.Role.Set:
			errs.Add(path+".role", "is required")
			continue
		case m.Role.Bad:
			errs.Add(path+".role", "must be a string")
			continue
		}
		if m.Content.Bad {
			errs.Add(path+".content", "must be a string or an array of content parts")
		} else if !m.Content.Set && role != "assistant" && role != "" {
			errs.Add(path+".content", "is required")
		}
		switch role {
		case "system", "developer":
			// Hoisted: every format the gateway speaks upstream has one system slot.
			if text, ok := textOnly(m.Content, path, errs); ok {
				system = append(system, text)
			}
		case "user":
			lastTool = false
			out = append(out, llm.Message{Role: llm.RoleUser, Content: userBlocks(m.Content, path, errs)})
		case "assistant":
			lastTool = false
			out = append(out, llm.Message{Role: llm.RoleAssistant, Content: assistantBlocks(m, path, errs)})
		case "tool":
			switch {
			case !m.ToolCallID.Set:
				errs.Add(path+".tool_call_id", "is required")
			case m.ToolCallID.Bad:
				errs.Add(path+".tool_call_id", "must be a string")
			}
			b := llm.Block{Type: llm.BlockToolResult, ToolCallID: m.ToolCallID.V}
			if text, ok := textOnly(m.Content, path, errs); ok && text != "" {
				b.Content = []llm.Block{{Type: llm.BlockText, Text: text}}
			}
			// All consecutive tool messages become ONE user message: Anthropic
			// requires every tool_result right after the assistant turn.
			if lastTool {
				last := &out[len(out)-1]
				last.Content = append(last.Content, b)
			} else {
				out = append(out, llm.Message{Role: llm.RoleUser, Content: []llm.Block{b}})
			}
			lastTool = true
		default:
			errs.Add(path+".role", "must be one of system, user, assistant, tool, developer")
		}
	}
	return out, strings.Join(system, "\n\n")
}

// textOnly reads a content that may only hold text (system, developer, tool).
func textOnly(c content, path string, errs *wire.FieldErrs) (string, bool) {
	if c.Bad || !c.Set {
		return "", false
	}
	if c.IsString {
		return c.Text, true
	}
	var sb strings.Builder
	ok := true
	for j, p := range c.Parts {
		pp := path + ".content[" + strconv.Itoa(j) + "]"
		if p.Type.V != "text" {
			errs.Add(pp+".type", "must be text")
			ok = false
			continue
		}
		if !p.Text.Set || p.Text.Bad {
			errs.Add(pp+".text", "must be a string")
			ok = false
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(p.Text.V)
	}
	return sb.String(), ok
}

func userBlocks(c content, path string, errs *wire.FieldErrs) []llm.Block {
	if c.Bad || !c.Set {
		return nil
	}
	if c.IsString {
		return []llm.Block{{Type: llm.BlockText, Text: c.Text}}
	}
	out := make([]llm.Block, 0, len(c.Parts))
	for j, p := range c.Parts {
		pp := path + ".content[" + strconv.Itoa(j) + "]"
		switch p.Type.V {
		case "text":
			if !p.Text.Set || p.Text.Bad {
				errs.Add(pp+".text", "must be a string")
				continue
			}
			out = append(out, llm.Block{Type: llm.BlockText, Text: p.Text.V})
		case "image_url":
			var img struct {
				URL wire.OptString `json:"url"`
			}
			if wire.IsNull(p.ImageURL) {
				errs.Add(pp+".image_url", "is required")
				continue
			}
			if !errs.DecodeElem(pp+".image_url", p.ImageURL, &img) {
				continue
			}
			if !img.URL.Set || img.URL.Bad || img.URL.V == "" {
				errs.Add(pp+".image_url.url", "must be a non-empty string")
				continue
			}
			out = append(out, llm.Block{Type: llm.BlockImage, ImageURL: img.URL.V})
		default:
			errs.Add(pp+".type", "must be one of text, image_url")
		}
	}
	return out
}

func assistantBlocks(m *wireMessage, path string, errs *wire.FieldErrs) []llm.Block {
	var out []llm.Block
	c := m.Content
	switch {
	case c.Bad || !c.Set:
	case c.IsString:
		if c.Text != "" || !m.ToolCalls.Set {
			out = append(out, llm.Block{Type: llm.BlockText, Text: c.Text})
		}
	default:
		for j, p := range c.Parts {
			pp := path + ".content[" + strconv.Itoa(j) + "]"
			switch p.Type.V {
			case "text":
				if !p.Text.Set || p.Text.Bad {
					errs.Add(pp+".text", "must be a string")
					continue
				}
				out = append(out, llm.Block{Type: llm.BlockText, Text: p.Text.V})
			case "refusal":
				out = append(out, llm.Block{Type: llm.BlockText, Text: p.Refusal.V})
			default:
				errs.Add(pp+".type", "must be one of text, refusal")
			}
		}
	}
	m.ToolCalls.Each(path+".tool_calls", errs, func(tp string, tc *wireToolCall) {
		if !tc.ID.Set || tc.ID.Bad || tc.ID.V == "" {
			errs.Add(tp+".id", "must be a non-empty string")
		}
		if tc.Type.Set && tc.Type.V != "function" {
			errs.Add(tp+".type", "must be function")
		}
		if tc.Function == nil {
			errs.Add(tp+".function", "is required")
			return
		}
		if !tc.Function.Name.Set || tc.Function.Name.Bad || tc.Function.Name.V == "" {
			errs.Add(tp+".function.name", "must be a non-empty string")
		}
		if tc.Function.Arguments.Bad {
			errs.Add(tp+".function.arguments", "must be a string")
			return
		}
		input, ok := parseArguments(tc.Function.Arguments.V)
		if !ok {
			// A JSON object is the only thing every upstream accepts as
			// tool input; reject rather than guess.
			errs.Add(tp+".function.arguments", "must be a JSON object encoded as a string")
			return
		}
		out = append(out, llm.Block{Type: llm.BlockToolUse, ToolCallID: tc.ID.V, ToolName: tc.Function.Name.V, ToolInput: input})
	})
	return out
}

var emptyObject = json.RawMessage(`{}`)

// parseArguments turns a tool call's arguments string into a JSON object;
// empty arguments mean no arguments.
func parseArguments(s string) (json.RawMessage, bool) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return emptyObject, true
	}
	if b[0] != '{' || !json.Valid(b) {
		return nil, false
	}
	return json.RawMessage(b), true
}

func decodeTools(tools wire.List[wireTool], errs *wire.FieldErrs) []llm.Tool {
	if !tools.Set {
		return nil
	}
	out := make([]llm.Tool, 0, len(tools.V))
	tools.Each("tools", errs, func(tp string, t *wireTool) {
		if t.Type.Set && t.Type.V != "function" {
			errs.Add(tp+".type", "must be function")
			return
		}
		if t.Function == nil {
			errs.Add(tp+".function", "is required")
			return
		}
		f := t.Function
		if !f.Name.Set || f.Name.Bad || f.Name.V == "" {
			errs.Add(tp+".function.name", "must be a non-empty string")
		}
		if f.Description.Bad {
			errs.Add(tp+".function.description", "must be a string")
		}
		if !wire.IsNull(f.Parameters) && f.Parameters[0] != '{' {
			errs.Add(tp+".function.parameters", "must be an object")
			return
		}
		tool := llm.Tool{Name: f.Name.V, Description: f.Description.V}
		if !wire.IsNull(f.Parameters) {
			tool.Parameters = f.Parameters
		}
		out = append(out, tool)
	})
	return out
}

func decodeToolChoice(raw json.RawMessage, errs *wire.FieldErrs) *llm.ToolChoice {
	if wire.IsNull(raw) {
		return nil
	}
	const reason = "must be one of none, auto, required or a function object"
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		switch s {
		case "auto":
			return &llm.ToolChoice{Mode: llm.ToolChoiceAuto}
		case "none":
			return &llm.ToolChoice{Mode: llm.ToolChoiceNone}
		case "required":
			return &llm.ToolChoice{Mode: llm.ToolChoiceRequired}
		}
		errs.Add("tool_choice", reason)
		return nil
	}
	var obj struct {
		Type     wire.OptString `json:"type"`
		Function *struct {
			Name wire.OptString `json:"name"`
		} `json:"function"`
	}
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil || obj.Type.V != "function" {
		errs.Add("tool_choice", reason)
		return nil
	}
	if obj.Function == nil || !obj.Function.Name.Set || obj.Function.Name.Bad || obj.Function.Name.V == "" {
		errs.Add("tool_choice.function.name", "must be a non-empty string")
		return nil
	}
	return &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: obj.Function.Name.V}
}

func decodeStop(raw json.RawMessage, errs *wire.FieldErrs) []string {
	if wire.IsNull(raw) {
		return nil
	}
	const reason = "must be a string or an array of strings"
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		if s == "" {
			return nil
		}
		return []string{s}
	case '[':
		var out []string
		if json.Unmarshal(raw, &out) != nil {
			errs.Add("stop", reason)
			return nil
		}
		return out
	}
	errs.Add("stop", reason)
	return nil
}

// Upstream body types: typed structs so encoding is reflection over cached
// field encoders, no maps.
type outRequest struct {
	Model             string         `json:"model"`
	Messages          []outMessage   `json:"messages"`
	MaxTokens         *int           `json:"max_tokens,omitempty"`
	Temperature       *float64       `json:"temperature,omitempty"`
	TopP              *float64       `json:"top_p,omitempty"`
	Stop              []string       `json:"stop,omitempty"`
	Tools             []outTool      `json:"tools,omitempty"`
	ToolChoice        any            `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool          `json:"parallel_tool_calls,omitempty"`
	User              string         `json:"user,omitempty"`
	Stream            bool           `json:"stream,omitempty"`
	StreamOptions     *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type outMessage struct {
	Role       string        `json:"role"`
	Content    any           `json:"content"` // string, []outPart or nil (null)
	ToolCalls  []outToolCall `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

type outPart struct {
	Type     string    `json:"type"`
	Text     *string   `json:"text,omitempty"`
	ImageURL *outImage `json:"image_url,omitempty"`
}

type outImage struct {
	URL string `json:"url"`
}

type outToolCall struct {
	Index    *int        `json:"index,omitempty"` // streams only
	ID       string      `json:"id,omitempty"`
	Type     string      `json:"type,omitempty"`
	Function outFunction `json:"function"`
}

type outFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type outTool struct {
	Type     string          `json:"type"`
	Function outToolFunction `json:"function"`
}

type outToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type outToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// EncodeRequest renders req as the body for an OpenAI-compatible upstream
// serving model. A streaming request always asks for the usage chunk: the
// gateway bills from it whether or not the client wants it.
func EncodeRequest(req *llm.Request, model string) ([]byte, error) {
	out := outRequest{
		Model:             model,
		Messages:          encodeMessages(req),
		MaxTokens:         req.MaxTokens,
		Temperature:       req.Temperature,
		TopP:              req.TopP,
		Stop:              req.Stop,
		ParallelToolCalls: req.ParallelToolCalls,
		User:              req.User,
		Stream:            req.Stream,
	}
	if req.Stream {
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	var extra map[string]json.RawMessage
	if req.Format == llm.FormatChat {
		extra = req.Extra
		if _, ok := extra["max_completion_tokens"]; ok {
			out.MaxTokens = nil // the client's own parameter name is forwarded in Extra
		}
	}
	if len(req.Tools) > 0 {
		out.Tools = make([]outTool, len(req.Tools))
		for i, t := range req.Tools {
			out.Tools[i] = outTool{Type: "function", Function: outToolFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
		}
	}
	if len(req.Tools) == 0 && req.Format != llm.FormatChat {
		// OpenAI rejects tool_choice and parallel_tool_calls without tools; a
		// chat client's own body is forwarded as sent, a translated one is not
		// broken by the translation.
		out.ParallelToolCalls = nil
	} else if tc := req.ToolChoice; tc != nil {
		switch tc.Mode {
		case llm.ToolChoiceTool:
			c := outToolChoice{Type: "function"}
			c.Function.Name = tc.Name
			out.ToolChoice = c
		case llm.ToolChoiceRequired:
			out.ToolChoice = "required"
		case llm.ToolChoiceNone:
			out.ToolChoice = "none"
		default:
			out.ToolChoice = "auto"
		}
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, err
	}
	return appendExtra(b, extra, knownKey)
}

// appendExtra splices pass-through fields into an encoded object, skipping
// keys the encoder owns so the upstream never sees a field twice. Keys are
// sorted so the body is deterministic.
func appendExtra(b []byte, extra map[string]json.RawMessage, owned func(string) bool) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !owned(k) && len(extra[k]) > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, nil
	}
	slices.Sort(keys)
	b = b[:len(b)-1] // drop '}'
	for _, k := range keys {
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b = append(b, ',')
		b = append(b, kb...)
		b = append(b, ':')
		b = append(b, extra[k]...)
	}
	return append(b, '}'), nil
}

func encodeMessages(req *llm.Request) []outMessage {
	out := make([]outMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, outMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			out = append(out, assistantMessage(m.Content))
			continue
		}
		// Tool results become role "tool" messages, first, so they directly
		// follow the assistant message that made the calls.
		var parts []llm.Block
		hadTool := false
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				out = append(out, outMessage{Role: "tool", ToolCallID: b.ToolCallID, Content: blocksText(b.Content)})
				hadTool = true
			} else if b.Type == llm.BlockText || b.Type == llm.BlockImage {
				parts = append(parts, b)
			}
		}
		if len(parts) == 0 && hadTool {
			continue
		}
		out = append(out, outMessage{Role: "user", Content: userContent(parts)})
	}
	return out
}

func userContent(blocks []llm.Block) any {
	if len(blocks) == 0 {
		return ""
	}
	if len(blocks) == 1 && blocks[0].Type == llm.BlockText {
		return blocks[0].Text
	}
	parts := make([]outPart, len(blocks))
	for i := range blocks {
		b := &blocks[i]
		if b.Type == llm.BlockText {
			parts[i] = outPart{Type: "text", Text: &b.Text}
		} else {
			parts[i] = outPart{Type: "image_url", ImageURL: &outImage{URL: imageURL(b)}}
		}
	}
	return parts
}

// imageURL gives an image block as a URL, building a data: URI for base64 data.
func imageURL(b *llm.Block) string {
	if b.ImageURL != "" {
		return b.ImageURL
	}
	return "data:" + b.MediaType + ";base64," + b.ImageData
}

func assistantMessage(blocks []llm.Block) outMessage {
	m := outMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, b := range blocks {
		switch b.Type {
		case llm.BlockText:
			text.WriteString(b.Text)
			hasText = true
		case llm.BlockToolUse:
			m.ToolCalls = append(m.ToolCalls, outToolCall{ID: b.ToolCallID, Type: "function",
				Function: outFunction{Name: b.ToolName, Arguments: arguments(b.ToolInput)}})
		}
		// thinking has no chat equivalent and is dropped
	}
	if hasText || len(m.ToolCalls) == 0 {
		m.Content = text.String()
	}
	return m
}

// arguments renders a tool input as the arguments string. An input that is
// a JSON string holds arguments an upstream sent that were not valid JSON
// (see DecodeResponse); they are given back verbatim.
func arguments(in json.RawMessage) string {
	if len(in) == 0 {
		return "{}"
	}
	if in[0] == '"' {
		var s string
		if json.Unmarshal(in, &s) == nil {
			return s
		}
	}
	return string(in)
}

// blocksText joins the text of tool_result content; chat tool messages
// carry text only, so images are dropped.
func blocksText(blocks []llm.Block) string {
	if len(blocks) == 1 && blocks[0].Type == llm.BlockText {
		return blocks[0].Text
	}
	var sb strings.Builder
	for _, b := range blocks {
		if b.Type == llm.BlockText {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}
