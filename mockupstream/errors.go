package mockupstream

import (
	"net/http"
	"strconv"
)

// Shared header values: assigning a shared slice avoids an allocation per
// response that Header().Set would make. The server never mutates them.
var (
	ctJSON = []string{"application/json"}
	ctSSE  = []string{"text/event-stream; charset=utf-8"}
	noCach = []string{"no-cache"}
)

// statusMessage is a vendor-like message for a scripted failure.
func statusMessage(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "Invalid request: the mock was told to reject it (fail-400)."
	case http.StatusUnauthorized:
		return "Incorrect API key provided."
	case http.StatusForbidden:
		return "You do not have access to this resource."
	case http.StatusNotFound:
		return "The model does not exist or you do not have access to it."
	case http.StatusTooManyRequests:
		return "Rate limit reached for requests. Please try again in 1s."
	case 529:
		return "Overloaded"
	case http.StatusServiceUnavailable:
		return "The server is overloaded or not ready yet."
	}
	if status >= 500 {
		return "The server had an error while processing your request."
	}
	return "Request failed with status " + strconv.Itoa(status) + "."
}

// openaiType returns OpenAI's error type and code for a status (as the API
// sends them: 429 is type "requests" with code "rate_limit_exceeded").
func openaiType(status int) (typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	}
	return "invalid_request_error", ""
}

// anthropicType is Anthropic's documented error type per status.
func anthropicType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// appendOpenAIError appends {"error":{"message","type","param","code"}}.
func appendOpenAIError(b []byte, status int, msg, param string) []byte {
	typ, code := openaiType(status)
	b = append(b, `{"error":{"message":`...)
	b = appendString(b, msg)
	b = append(b, `,"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"param":`...)
	b = appendNullable(b, param)
	b = append(b, `,"code":`...)
	b = appendNullable(b, code)
	return append(b, `}}`...)
}

// appendAnthropicError appends {"type":"error","error":{"type","message"}}.
func appendAnthropicError(b []byte, typ, msg string) []byte {
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	return append(b, `}}`...)
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// writeError writes a vendor-shaped error body for format f.
func writeError(w http.ResponseWriter, f format, status int, msg, param string) {
	bp := getBuf()
	defer putBuf(bp)
	b := *bp
	if f == fmtAnthropic {
		b = appendAnthropicError(b, anthropicType(status), msg)
	} else {
		b = appendOpenAIError(b, status, msg, param)
	}
	*bp = b
	writeJSON(w, status, b)
}

// writeAuthError answers a missing or wrong credential as each vendor does.
func writeAuthError(w http.ResponseWriter, f format) {
	switch f {
	case fmtAzure:
		writeAzureError(w, http.StatusUnauthorized, "401",
			"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
	case fmtAnthropic:
		writeError(w, f, http.StatusUnauthorized, "invalid x-api-key", "")
	default:
		writeError(w, f, http.StatusUnauthorized, "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.", "")
	}
}

// writeAzureError writes Azure's own {"error":{"code","message"}} shape,
// used by Azure's front door for auth and api-version failures.
func writeAzureError(w http.ResponseWriter, status int, code, msg string) {
	b := append([]byte(`{"error":{"code":`), appendString(nil, code)...)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	b = append(b, `}}`...)
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = ctJSON
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
