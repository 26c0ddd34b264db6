package provider

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxErrorBody is how much of a non-2xx body is read: enough for any vendor
// error, small enough that a misbehaving upstream cannot make us buffer a
// gigabyte of HTML.
const MaxErrorBody = 1 << 20

// ErrorFromResponse turns a non-2xx response into an *UpstreamError, reading
// at most MaxErrorBody of the body (the caller still closes it). The body
// shapes understood cover OpenAI {"error":{"message","type","code"}},
// Anthropic {"type":"error","error":{"type","message"}}, Azure
// {"error":{"code","message"}}, and the looser shapes of OpenAI-compatible
// servers ({"error":"text"}, {"message":..., "type":...}, {"detail":...}).
func ErrorFromResponse(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	typ, msg := ParseErrorBody(b)
	if msg == "" {
		msg = strings.TrimSpace(string(b))
		if len(msg) > 512 {
			msg = msg[:512]
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
	}
	return &UpstreamError{
		Status:     resp.StatusCode,
		Type:       typ,
		Message:    msg,
		RetryAfter: ParseRetryAfter(resp.Header, time.Now()),
	}
}

// ParseErrorBody extracts the vendor error type and message from an error
// body; both are empty when the body has neither.
func ParseErrorBody(b []byte) (typ, msg string) {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(b, &env) != nil {
		return "", ""
	}
	if len(env.Error) > 0 {
		var inner struct {
			Type    string          `json:"type"`
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"` // string or number
		}
		var s string
		switch {
		case json.Unmarshal(env.Error, &inner) == nil && (inner.Message != "" || inner.Type != ""):
			typ = inner.Type
			if typ == "" {
				typ = rawString(inner.Code) // Azure puts its kind in code
			}
			return typ, inner.Message
		case json.Unmarshal(env.Error, &s) == nil:
			return "", s
		}
	}
	if env.Message != "" {
		if env.Type == "error" {
			env.Type = ""
		}
		return env.Type, env.Message
	}
	var detail string
	if json.Unmarshal(env.Detail, &detail) == nil {
		return "", detail
	}
	return "", ""
}

func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) > 0 && raw[0] != 'n' {
		return string(raw)
	}
	return ""
}

// ParseRetryAfter reads how long the upstream asked us to wait:
// retry-after-ms (OpenAI, milliseconds, may be fractional) wins over
// retry-after (seconds or an HTTP date, RFC 9110). 0 when absent,
// unparsable or in the past.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
