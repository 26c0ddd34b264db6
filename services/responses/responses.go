// Package responses is the gateway's own /v1/responses endpoint: a small,
// non-streaming format (input + instructions in, one output string back).
// No upstream speaks it, so only the client side exists: decode and
// validate a request into the canonical form, encode a canonical response.
package responses

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/wire"
)

// Bodies here are small and off the hot path of the two big formats, so the
// request is read through a map of raw fields: each field decodes on its own
// and every bad one can be reported.

// DecodeRequest parses and validates a /v1/responses body. Errors are
// *apierr.Error (400 invalid_request_error) listing every bad field.
func DecodeRequest(body []byte) (*llm.Request, error) {
	if !json.Valid(body) {
		return nil, apierr.InvalidRequest("Request body is not valid JSON.")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, apierr.InvalidRequest("Request body must be a JSON object.")
	}
	var errs wire.FieldErrs
	add := errs.Add
	var model wire.OptString
	if raw := top["model"]; len(raw) > 0 {
		_ = model.UnmarshalJSON(raw)
	}
	req := &llm.Request{Format: llm.FormatResponses, Model: errs.Model(model)}
	var system []string

	if raw := top["instructions"]; present(raw) {
		if s, ok := str(raw); !ok {
			add("instructions", "must be a string")
		} else if s != "" {
			system = append(system, s)
		}
	}
	raw := top["input"]
	switch {
	case !present(raw):
		add("input", "is required")
	case raw[0] == '"':
		s, _ := str(raw)
		if s == "" {
			add("input", "must not be empty")
		}
		req.Messages = []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: s}}}}
	case raw[0] == '[':
		var items []json.RawMessage
		_ = json.Unmarshal(raw, &items)
		if len(items) == 0 {
			add("input", "must not be empty")
		}
		for i, it := range items {
			decodeItem(it, "input["+strconv.Itoa(i)+"]", req, &system, add)
		}
	default:
		add("input", "must be a string or an array of messages")
	}
	req.System = strings.Join(system, "\n\n")
	req.Temperature = number(top["temperature"], "temperature", 0, 2, add)
	req.TopP = number(top["top_p"], "top_p", 0, 1, add)
	if raw := top["max_output_tokens"]; present(raw) {
		var f float64
		switch {
		case json.Unmarshal(raw, &f) != nil || f != float64(int64(f)) || f > 1<<53:
			add("max_output_tokens", "must be an integer")
		case f < 1:
			add("max_output_tokens", "must be >= 1")
		default:
			n := int(f)
			req.MaxTokens = &n
		}
	}
	if raw := top["stream"]; present(raw) {
		var b bool
		switch {
		case json.Unmarshal(raw, &b) != nil:
			add("stream", "must be a boolean")
		case b:
			add("stream", "is not supported on /v1/responses")
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	for k, v := range top {
		switch k {
		case "model", "input", "instructions", "temperature", "top_p", "max_output_tokens", "stream":
			continue
		}
		if req.Extra == nil {
			req.Extra = make(map[string]json.RawMessage)
		}
		req.Extra[k] = v
	}
	return req, nil
}

func decodeItem(raw json.RawMessage, path string, req *llm.Request, system *[]string, add func(string, string)) {
	var it map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &it) != nil {
		add(path, "must be an object")
		return
	}
	if t, ok := str(it["type"]); present(it["type"]) && (!ok || t != "message") {
		add(path+".type", "must be message")
		return
	}
	role, ok := str(it["role"])
	switch {
	case !present(it["role"]):
		add(path+".role", "is required")
		return
	case !ok || (role != "user" && role != "assistant" && role != "system" && role != "developer"):
		add(path+".role", "must be one of user, assistant, system, developer")
		return
	}
	text, ok := contentText(it["content"], path+".content", add)
	if !ok {
		return
	}
	switch role {
	case "system", "developer":
		*system = append(*system, text)
	case "user":
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: text}}})
	default:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: text}}})
	}
}

// contentText reads a content: a string or text parts, joined.
func contentText(raw json.RawMessage, path string, add func(string, string)) (string, bool) {
	if !present(raw) {
		add(path, "is required")
		return "", false
	}
	if s, ok := str(raw); ok {
		return s, true
	}
	var parts []struct {
		Type json.RawMessage `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
		add(path, "must be a string or an array of text parts")
		return "", false
	}
	var sb strings.Builder
	ok := true
	for j, p := range parts {
		pp := path + "[" + strconv.Itoa(j) + "]"
		t, _ := str(p.Type)
		if t != "input_text" && t != "output_text" && t != "text" {
			add(pp+".type", "must be one of input_text, output_text, text")
			ok = false
			continue
		}
		s, isStr := str(p.Text)
		if !isStr {
			add(pp+".text", "must be a string")
			ok = false
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(s)
	}
	return sb.String(), ok
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) }

func str(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

func number(raw json.RawMessage, field string, lo, hi float64, add func(string, string)) *float64 {
	if !present(raw) {
		return nil
	}
	var f float64
	switch {
	case json.Unmarshal(raw, &f) != nil:
		add(field, "must be a number")
	case f < lo:
		add(field, "must be >= "+strconv.FormatFloat(lo, 'g', -1, 64))
	case f > hi:
		add(field, "must be <= "+strconv.FormatFloat(hi, 'g', -1, 64))
	default:
		return &f
	}
	return nil
}

type outResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Output  string   `json:"output"`
	Status  string   `json:"status"`
	Usage   outUsage `json:"usage"`
}

type outUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// EncodeResponse renders resp; model is what the client sent. output is
// every text block concatenated; input_tokens counts cached tokens too,
// since this format has no field to split them into.
func EncodeResponse(resp *llm.Response, model string) ([]byte, error) {
	var sb strings.Builder
	for _, b := range resp.Content {
		if b.Type == llm.BlockText {
			sb.WriteString(b.Text)
		}
	}
	id := resp.ID
	switch {
	case id == "":
		id = "resp_" + rand.Text()
	case !strings.HasPrefix(id, "resp_"):
		id = "resp_" + id
	}
	created := resp.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	status := "completed"
	if resp.FinishReason == llm.FinishLength {
		status = "incomplete"
	}
	return json.Marshal(&outResponse{ID: id, Object: "response", Created: created, Model: model, Output: sb.String(), Status: status,
		Usage: outUsage{InputTokens: resp.Usage.PromptTokens(), OutputTokens: resp.Usage.OutputTokens, TotalTokens: resp.Usage.TotalTokens()}})
}
