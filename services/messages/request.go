// Package messages speaks the Anthropic messages wire format in both roles:
// as the client-facing /v1/messages format (decode and validate a request,
// encode a response and an event stream) and as the upstream format of
// Anthropic (encode a request, decode a response and a stream). Everything
// here is a pure translation to and from the canonical llm types.
package messages

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/wire"
)

// wireRequest is the client body; see chat.wireRequest for why scalars are
// opt* types and polymorphic fields raw.
type wireRequest struct {
	Model         wire.OptString  `json:"model"`
	MaxTokens     wire.OptNumber  `json:"max_tokens"`
	Messages      []wireMessage   `json:"messages"`
	System        json.RawMessage `json:"system"`
	Temperature   wire.OptNumber  `json:"temperature"`
	TopP          wire.OptNumber  `json:"top_p"`
	TopK          wire.OptNumber  `json:"top_k"`
	StopSequences json.RawMessage `json:"stop_sequences"`
	Stream        wire.OptBool    `json:"stream"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Metadata      json.RawMessage `json:"metadata"`
}

// knownKey says which top-level fields the gateway interprets; the rest
// (thinking, service_tier, container, ...) go to Request.Extra.
func knownKey(k string) bool {
	switch k {
	case "model", "max_tokens", "messages", "system", "temperature", "top_p", "top_k",
		"stop_sequences", "stream", "tools", "tool_choice", "metadata":
		return true
	}
	return false
}

type wireMessage struct {
	Role      wire.OptString `json:"role"`
	Content   content        `json:"content"`
	notObject bool
}

// content is a message content: a string or an array of blocks.
type content = wire.Content[wireBlock]

// wireBlock is any content block; which fields matter depends on Type.
type wireBlock struct {
	Type      wire.OptString  `json:"type"`
	Text      wire.OptString  `json:"text"`
	Source    json.RawMessage `json:"source"`
	ID        wire.OptString  `json:"id"`
	Name      wire.OptString  `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID wire.OptString  `json:"tool_use_id"`
	Content   content         `json:"content"`
	IsError   wire.OptBool    `json:"is_error"`
	Thinking  wire.OptString  `json:"thinking"`
	Signature wire.OptString  `json:"signature"`
}

type wireSource struct {
	Type      wire.OptString `json:"type"`
	MediaType wire.OptString `json:"media_type"`
	Data      wire.OptString `json:"data"`
	URL       wire.OptString `json:"url"`
}

type wireTool struct {
	Type        wire.OptString  `json:"type"`
	Name        wire.OptString  `json:"name"`
	Description wire.OptString  `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireToolChoice struct {
	Type                   wire.OptString `json:"type"`
	Name                   wire.OptString `json:"name"`
	DisableParallelToolUse wire.OptBool   `json:"disable_parallel_tool_use"`
}

// DecodeRequest parses and validates a /v1/messages body. Errors are
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
	req := &llm.Request{Format: llm.FormatMessages, Model: errs.Model(w.Model)}
	if !w.MaxTokens.Set {
		errs.Add("max_tokens", "is required")
	} else {
		req.MaxTokens = errs.Integer("max_tokens", w.MaxTokens, 1)
	}
	switch {
	case messagesBad:
		errs.Add("messages", "must be an array")
	case w.Messages == nil:
		errs.Add("messages", "is required")
	case len(w.Messages) == 0:
		errs.Add("messages", "must not be empty")
	}
	req.Messages = decodeMessages(w.Messages, &errs)
	req.System = decodeSystem(w.System, &errs)
	req.Temperature = errs.Number("temperature", w.Temperature, 0, 1)
	req.TopP = errs.Number("top_p", w.TopP, 0, 1)
	req.TopK = errs.Integer("top_k", w.TopK, 0)
	req.Stop = decodeStrings("stop_sequences", w.StopSequences, &errs)
	if w.Stream.Bad {
		errs.Add("stream", "must be a boolean")
	}
	req.Stream = w.Stream.V
	req.Tools = decodeTools(w.Tools, &errs)
	req.ToolChoice, req.ParallelToolCalls = decodeToolChoice(w.ToolChoice, &errs)
	if !wire.IsNull(w.Metadata) {
		var md struct {
			UserID wire.OptString `json:"user_id"`
		}
		if errs.DecodeElem("metadata", w.Metadata, &md) {
			if md.UserID.Bad {
				errs.Add("metadata.user_id", "must be a string")
			}
			req.User = md.UserID.V
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	req.Extra = wire.Extras(body, knownKey)
	return req, nil
}

// markMessages: see chat.markMessages.
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

func decodeMessages(in []wireMessage, errs *wire.FieldErrs) []llm.Message {
	out := make([]llm.Message, 0, len(in))
	for i := range in {
		m := &in[i]
		path := "messages[" + strconv.Itoa(i) + "]"
		if m.notObject {
			errs.Add(path, "must be an object")
			continue
		}
		var role llm.Role
		switch {
		case !m.Role.Set:
			errs.Add(path+".role", "is required")
		case m.Role.V == "user":
			role = llm.RoleUser
		case m.Role.V == "assistant":
			role = llm.RoleAssistant
		default:
			errs.Add(path+".role", "must be one of user, assistant")
		}
		switch {
		case m.Content.Bad:
			errs.Add(path+".content", "must be a string or an array of content blocks")
		case !m.Content.Set:
			errs.Add(path+".content", "is required")
		}
		if role == "" {
			continue
		}
		out = append(out, llm.Message{Role: role, Content: decodeBlocks(m.Content, path+".content", errs, true)})
	}
	return out
}

// decodeBlocks converts a content; nested (tool_result content) allows only
// text and image.
func decodeBlocks(c content, path string, errs *wire.FieldErrs, top bool) []llm.Block {
	if c.Bad || !c.Set {
		return nil
	}
	if c.IsString {
		return []llm.Block{{Type: llm.BlockText, Text: c.Text}}
	}
	out := make([]llm.Block, 0, len(c.Parts))
	for j := range c.Parts {
		b := &c.Parts[j]
		bp := path + "[" + strconv.Itoa(j) + "]"
		switch t := b.Type.V; {
		case t == "text":
			if !b.Text.Set || b.Text.Bad {
				errs.Add(bp+".text", "must be a string")
				continue
			}
			out = append(out, llm.Block{Type: llm.BlockText, Text: b.Text.V})
		case t == "image":
			if img, ok := decodeImage(b.Source, bp+".source", errs); ok {
				out = append(out, img)
			}
		case t == "tool_use" && top:
			if !b.ID.Set || b.ID.Bad || b.ID.V == "" {
				errs.Add(bp+".id", "must be a non-empty string")
			}
			if !b.Name.Set || b.Name.Bad || b.Name.V == "" {
				errs.Add(bp+".name", "must be a non-empty string")
			}
			input := json.RawMessage(`{}`)
			if !wire.IsNull(b.Input) {
				if b.Input[0] != '{' {
					errs.Add(bp+".input", "must be an object")
					continue
				}
				input = b.Input
			}
			out = append(out, llm.Block{Type: llm.BlockToolUse, ToolCallID: b.ID.V, ToolName: b.Name.V, ToolInput: input})
		case t == "tool_result" && top:
			if !b.ToolUseID.Set || b.ToolUseID.Bad || b.ToolUseID.V == "" {
				errs.Add(bp+".tool_use_id", "must be a non-empty string")
			}
			if b.IsError.Bad {
				errs.Add(bp+".is_error", "must be a boolean")
			}
			if b.Content.Bad {
				errs.Add(bp+".content", "must be a string or an array of content blocks")
			}
			res := llm.Block{Type: llm.BlockToolResult, ToolCallID: b.ToolUseID.V, IsError: b.IsError.V}
			if !(b.Content.IsString && b.Content.Text == "") {
				res.Content = decodeBlocks(b.Content, bp+".content", errs, false)
			}
			out = append(out, res)
		case t == "thinking" && top:
			if b.Thinking.Bad {
				errs.Add(bp+".thinking", "must be a string")
			}
			if b.Signature.Bad {
				errs.Add(bp+".signature", "must be a string")
			}
			out = append(out, llm.Block{Type: llm.BlockThinking, Text: b.Thinking.V, Signature: b.Signature.V})
		case t == "redacted_thinking" && top:
			// Encrypted reasoning only Anthropic can read; the canonical form
			// has no slot for it, so it is dropped.
		case !b.Type.Set:
			errs.Add(bp+".type", "is required")
		case top:
			errs.Add(bp+".type", "must be one of text, image, tool_use, tool_result, thinking")
		default:
			errs.Add(bp+".type", "must be one of text, image")
		}
	}
	return out
}

func decodeImage(raw json.RawMessage, path string, errs *wire.FieldErrs) (llm.Block, bool) {
	if wire.IsNull(raw) {
		errs.Add(path, "is required")
		return llm.Block{}, false
	}
	var s wireSource
	if !errs.DecodeElem(path, raw, &s) {
		return llm.Block{}, false
	}
	switch s.Type.V {
	case "base64":
		ok := true
		if !s.MediaType.Set || s.MediaType.Bad || s.MediaType.V == "" {
			errs.Add(path+".media_type", "must be a non-empty string")
			ok = false
		}
		if !s.Data.Set || s.Data.Bad || s.Data.V == "" {
			errs.Add(path+".data", "must be a non-empty string")
			ok = false
		}
		return llm.Block{Type: llm.BlockImage, MediaType: s.MediaType.V, ImageData: s.Data.V}, ok
	case "url":
		if !s.URL.Set || s.URL.Bad || s.URL.V == "" {
			errs.Add(path+".url", "must be a non-empty string")
			return llm.Block{}, false
		}
		return llm.Block{Type: llm.BlockImage, ImageURL: s.URL.V}, true
	}
	errs.Add(path+".type", "must be one of base64, url")
	return llm.Block{}, false
}

func decodeSystem(raw json.RawMessage, errs *wire.FieldErrs) string {
	if wire.IsNull(raw) {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []struct {
		Type wire.OptString `json:"type"`
		Text wire.OptString `json:"text"`
	}
	if raw[0] != '[' || json.Unmarshal(raw, &blocks) != nil {
		errs.Add("system", "must be a string or an array of text blocks")
		return ""
	}
	parts := make([]string, 0, len(blocks))
	for i, b := range blocks {
		if b.Type.V != "text" {
			errs.Add("system["+strconv.Itoa(i)+"].type", "must be text")
			continue
		}
		if !b.Text.Set || b.Text.Bad {
			errs.Add("system["+strconv.Itoa(i)+"].text", "must be a string")
			continue
		}
		parts = append(parts, b.Text.V)
	}
	return strings.Join(parts, "\n\n")
}

func decodeStrings(field string, raw json.RawMessage, errs *wire.FieldErrs) []string {
	if wire.IsNull(raw) {
		return nil
	}
	var out []string
	if raw[0] != '[' || json.Unmarshal(raw, &out) != nil {
		errs.Add(field, "must be an array of strings")
		return nil
	}
	return out
}

func decodeTools(raw json.RawMessage, errs *wire.FieldErrs) []llm.Tool {
	if wire.IsNull(raw) {
		return nil
	}
	var elems []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		errs.Add("tools", "must be an array")
		return nil
	}
	out := make([]llm.Tool, 0, len(elems))
	for i, el := range elems {
		tp := "tools[" + strconv.Itoa(i) + "]"
		var t wireTool
		if !errs.DecodeElem(tp, el, &t) {
			continue
		}
		if t.Type.Set && t.Type.V != "custom" {
			// Server tools (web search, code execution...) run inside
			// Anthropic; no other upstream can honour them.
			errs.Add(tp+".type", "must be custom")
			continue
		}
		if !t.Name.Set || t.Name.Bad || t.Name.V == "" {
			errs.Add(tp+".name", "must be a non-empty string")
		}
		if t.Description.Bad {
			errs.Add(tp+".description", "must be a string")
		}
		switch {
		case wire.IsNull(t.InputSchema):
			errs.Add(tp+".input_schema", "is required")
			continue
		case t.InputSchema[0] != '{':
			errs.Add(tp+".input_schema", "must be an object")
			continue
		}
		out = append(out, llm.Tool{Name: t.Name.V, Description: t.Description.V, Parameters: t.InputSchema})
	}
	return out
}

func decodeToolChoice(raw json.RawMessage, errs *wire.FieldErrs) (*llm.ToolChoice, *bool) {
	if wire.IsNull(raw) {
		return nil, nil
	}
	var tc wireToolChoice
	if !errs.DecodeElem("tool_choice", raw, &tc) {
		return nil, nil
	}
	var out *llm.ToolChoice
	switch tc.Type.V {
	case "auto":
		out = &llm.ToolChoice{Mode: llm.ToolChoiceAuto}
	case "any":
		out = &llm.ToolChoice{Mode: llm.ToolChoiceRequired}
	case "none":
		out = &llm.ToolChoice{Mode: llm.ToolChoiceNone}
	case "tool":
		if !tc.Name.Set || tc.Name.Bad || tc.Name.V == "" {
			errs.Add("tool_choice.name", "must be a non-empty string")
			return nil, nil
		}
		out = &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: tc.Name.V}
	default:
		errs.Add("tool_choice.type", "must be one of auto, any, none, tool")
		return nil, nil
	}
	if tc.DisableParallelToolUse.Bad {
		errs.Add("tool_choice.disable_parallel_tool_use", "must be a boolean")
	}
	if tc.DisableParallelToolUse.V {
		f := false
		return out, &f
	}
	return out, nil
}

// Upstream body types.
type outRequest struct {
	Model         string         `json:"model"`
	MaxTokens     int            `json:"max_tokens"`
	System        string         `json:"system,omitempty"`
	Messages      []outMessage   `json:"messages"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	TopK          *int           `json:"top_k,omitempty"`
	StopSequences []string       `json:"stop_sequences,omitempty"`
	Tools         []outTool      `json:"tools,omitempty"`
	ToolChoice    *outToolChoice `json:"tool_choice,omitempty"`
	Metadata      *outMetadata   `json:"metadata,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
}

type outMessage struct {
	Role    string     `json:"role"`
	Content []outBlock `json:"content"`
}

// outBlock is any content block (requests and responses).
type outBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Source    *outSource      `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   any             `json:"content,omitempty"` // string or []outBlock
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
}

type outSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type outTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type outToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type outMetadata struct {
	UserID string `json:"user_id"`
}

// defaultMaxTokens fills Anthropic's required max_tokens when the client
// (a chat client, for which it is optional) did not set one.
const defaultMaxTokens = 4096

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// EncodeRequest renders req as the body for Anthropic serving model.
func EncodeRequest(req *llm.Request, model string) ([]byte, error) {
	out := outRequest{
		Model:         model,
		MaxTokens:     defaultMaxTokens,
		System:        req.System,
		Messages:      encodeMessages(req.Messages),
		Temperature:   req.Temperature,
		TopP:          req.TopP,
		TopK:          req.TopK,
		StopSequences: req.Stop,
		Stream:        req.Stream,
	}
	if req.MaxTokens != nil {
		out.MaxTokens = *req.MaxTokens
	}
	if t := req.Temperature; t != nil && *t > 1 {
		// Chat allows 0..2, Anthropic 0..1 (and answers 400 above 1): clamp
		// to the nearest value Anthropic accepts rather than fail the call.
		one := 1.0
		out.Temperature = &one
	}
	if req.User != "" {
		out.Metadata = &outMetadata{UserID: req.User}
	}
	if len(req.Tools) > 0 {
		out.Tools = make([]outTool, len(req.Tools))
		for i, t := range req.Tools {
			schema := t.Parameters
			if len(schema) == 0 {
				schema = emptySchema // required by Anthropic, optional in chat
			}
			out.Tools[i] = outTool{Name: t.Name, Description: t.Description, InputSchema: schema}
		}
		out.ToolChoice = encodeToolChoice(req.ToolChoice, req.ParallelToolCalls)
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, err
	}
	if req.Format != llm.FormatMessages {
		return b, nil
	}
	return appendExtra(b, req.Extra, knownKey)
}

func encodeToolChoice(tc *llm.ToolChoice, parallel *bool) *outToolChoice {
	noParallel := parallel != nil && !*parallel
	if tc == nil {
		if !noParallel {
			return nil
		}
		return &outToolChoice{Type: "auto", DisableParallelToolUse: true}
	}
	switch tc.Mode {
	case llm.ToolChoiceNone:
		return &outToolChoice{Type: "none"}
	case llm.ToolChoiceRequired:
		return &outToolChoice{Type: "any", DisableParallelToolUse: noParallel}
	case llm.ToolChoiceTool:
		return &outToolChoice{Type: "tool", Name: tc.Name, DisableParallelToolUse: noParallel}
	}
	return &outToolChoice{Type: "auto", DisableParallelToolUse: noParallel}
}

// encodeMessages builds Anthropic turns: empty text blocks and unsigned
// thinking (both rejected by Anthropic) are dropped, consecutive turns of
// one role are merged (Anthropic wants alternation), tool_result blocks go
// first in a user turn and tool_use blocks last in an assistant turn.
func encodeMessages(in []llm.Message) []outMessage {
	out := make([]outMessage, 0, len(in))
	for _, m := range in {
		role := "user"
		if m.Role == llm.RoleAssistant {
			role = "assistant"
		}
		blocks := encodeBlocks(m.Content)
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
		} else {
			out = append(out, outMessage{Role: role, Content: blocks})
		}
	}
	for i := range out {
		if out[i].Role == "user" {
			stablePartition(out[i].Content, func(b *outBlock) bool { return b.Type == "tool_result" })
		} else {
			stablePartition(out[i].Content, func(b *outBlock) bool { return b.Type != "tool_use" })
		}
	}
	return out
}

// stablePartition moves the blocks for which first is true to the front,
// keeping order within both groups.
func stablePartition(bs []outBlock, first func(*outBlock) bool) {
	sorted := true
	seenSecond := false
	for i := range bs {
		if !first(&bs[i]) {
			seenSecond = true
		} else if seenSecond {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	tmp := make([]outBlock, 0, len(bs))
	for i := range bs {
		if first(&bs[i]) {
			tmp = append(tmp, bs[i])
		}
	}
	for i := range bs {
		if !first(&bs[i]) {
			tmp = append(tmp, bs[i])
		}
	}
	copy(bs, tmp)
}

func encodeBlocks(in []llm.Block) []outBlock {
	out := make([]outBlock, 0, len(in))
	for i := range in {
		b := &in[i]
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				out = append(out, outBlock{Type: "text", Text: &b.Text})
			}
		case llm.BlockImage:
			out = append(out, outBlock{Type: "image", Source: imageSource(b)})
		case llm.BlockToolUse:
			out = append(out, outBlock{Type: "tool_use", ID: b.ToolCallID, Name: b.ToolName, Input: objectInput(b.ToolInput)})
		case llm.BlockToolResult:
			ob := outBlock{Type: "tool_result", ToolUseID: b.ToolCallID, IsError: b.IsError}
			if len(b.Content) == 1 && b.Content[0].Type == llm.BlockText {
				if b.Content[0].Text != "" {
					ob.Content = b.Content[0].Text
				}
			} else if inner := encodeBlocks(b.Content); len(inner) > 0 {
				ob.Content = inner
			}
			out = append(out, ob)
		case llm.BlockThinking:
			if b.Signature != "" {
				out = append(out, outBlock{Type: "thinking", Thinking: &b.Text, Signature: &b.Signature})
			}
		}
	}
	return out
}

// objectInput: Anthropic requires tool_use.input to be an object. Empty
// input, or arguments an OpenAI model left unparseable (held as a JSON
// string), become {}.
func objectInput(in json.RawMessage) json.RawMessage {
	if len(in) == 0 || in[0] != '{' {
		return json.RawMessage(`{}`)
	}
	return in
}

func imageSource(b *llm.Block) *outSource {
	if b.ImageURL == "" {
		return &outSource{Type: "base64", MediaType: b.MediaType, Data: b.ImageData}
	}
	// data:<media type>;base64,<data> is how chat clients inline images;
	// Anthropic takes those as a base64 source.
	if rest, ok := strings.CutPrefix(b.ImageURL, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			if mt, ok := strings.CutSuffix(meta, ";base64"); ok {
				return &outSource{Type: "base64", MediaType: mt, Data: data}
			}
		}
	}
	return &outSource{Type: "url", URL: b.ImageURL}
}

// appendExtra: see chat.appendExtra.
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
	b = b[:len(b)-1]
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
