package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/llmgw/gateway/services/llm"
)

// HTTP plumbing shared by the provider clients: every client does the same
// POST, status check, error parsing and body handling; only URLs, headers and
// codecs differ, and those stay in the client packages.

// Shared header values: assigning a ready slice skips the canonicalisation
// and allocation of Header.Set on the hot path. net/http never mutates them.
var (
	headerJSON = []string{"application/json"}
	headerSSE  = []string{"text/event-stream"}
)

// Call is one upstream POST.
type Call struct {
	// Name prefixes errors ("openai", "azure", "anthropic").
	Name   string
	URL    string
	Header http.Header // auth and vendor headers; Content-Type and Accept are added
	Body   []byte
	Stream bool
}

// Do sends c under a child context of ctx that it owns. On a 2xx it returns
// the response and the context's cancel function, which the caller must call
// (after closing the body). On anything else it has already released
// everything and returns *UpstreamError for a non-2xx status or the wrapped
// transport error (errors.Is sees context.DeadlineExceeded, ECONNREFUSED...).
func Do(ctx context.Context, hc *http.Client, c Call) (*http.Response, context.CancelCauseFunc, error) {
	cctx, cancel := context.WithCancelCause(ctx)
	// bytes.Reader gives the request a ContentLength and a GetBody, so the
	// transport can replay it on a stale pooled connection.
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		cancel(nil)
		return nil, nil, fmt.Errorf("%s: building request: %w", c.Name, err)
	}
	if c.Header != nil {
		req.Header = c.Header
	}
	req.Header["Content-Type"] = headerJSON
	if c.Stream {
		req.Header["Accept"] = headerSSE
	} else {
		req.Header["Accept"] = headerJSON
	}
	resp, err := hc.Do(req)
	if err != nil {
		cancel(nil)
		return nil, nil, fmt.Errorf("%s upstream: %w", c.Name, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := ErrorFromResponse(resp)
		resp.Body.Close()
		cancel(nil)
		return nil, nil, err
	}
	return resp, cancel, nil
}

// Complete runs a non-streaming call and decodes the whole reply with
// decode (the client's response codec).
func Complete(ctx context.Context, hc *http.Client, c Call, decode func([]byte) (*llm.Response, error)) (*llm.Response, error) {
	resp, cancel, err := Do(ctx, hc, c)
	if err != nil {
		return nil, err
	}
	defer cancel(nil)
	defer resp.Body.Close()
	b, err := ReadBody(c.Name, resp)
	if err != nil {
		return nil, err
	}
	out, err := decode(b)
	if err != nil {
		return nil, AsDecodeError(err)
	}
	return out, nil
}

// OpenStream runs a streaming call and returns its events, decoded by the
// client's decoder. It fails before the first event when the upstream
// answers non-2xx or not with an event stream, so the caller can still fall
// back. idle is the longest gap between bytes (0 = none).
func OpenStream(ctx context.Context, hc *http.Client, c Call, idle time.Duration, decoder func(io.Reader) EventDecoder) (llm.Stream, error) {
	resp, cancel, err := Do(ctx, hc, c)
	if err != nil {
		return nil, err
	}
	if !IsEventStream(resp) {
		err := NotEventStream(c.Name, resp)
		resp.Body.Close()
		cancel(nil)
		return nil, err
	}
	return NewStream(resp.Request.Context(), c.Name, resp, cancel, idle, decoder), nil
}

// ReadBody reads a whole 2xx body (a non-streaming reply). Read failures are
// transport errors (a cut connection, a deadline), not malformed replies,
// so they are wrapped as such.
func ReadBody(name string, resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n < 0 || n > 64<<20 {
		n = 4096
	}
	buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("%s upstream: reading reply: %w", name, err)
	}
	return buf.Bytes(), nil
}

// AsDecodeError keeps the codecs' own error types and wraps anything else
// as a MalformedError.
func AsDecodeError(err error) error {
	var ue *UpstreamError
	var me *MalformedError
	if errors.As(err, &ue) || errors.As(err, &me) {
		return err
	}
	return &MalformedError{Err: err}
}

// IsEventStream reports whether resp is text/event-stream (with any params).
func IsEventStream(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// NotEventStream is the error for a 2xx answer to a stream request that is
// not an event stream: typically a JSON error or an HTML page from a proxy.
// The body (at most MaxErrorBody) is read for a message; the caller closes it.
func NotEventStream(name string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	_, msg := ParseErrorBody(b)
	if msg == "" {
		msg = strings.TrimSpace(string(b))
		if len(msg) > 256 {
			msg = msg[:256]
		}
	}
	return &MalformedError{Err: fmt.Errorf("%s: stream request answered %d with Content-Type %q, not text/event-stream: %s",
		name, resp.StatusCode, resp.Header.Get("Content-Type"), msg)}
}
