// Package anthropic is the provider client for the Anthropic Messages API:
// {api_base}/v1/messages with x-api-key and anthropic-version headers.
package anthropic

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/messages"
	"github.com/llmgw/gateway/services/provider"
)

func init() {
	provider.Register(provider.TypeAnthropic, func(hc *http.Client) provider.Client { return New(hc) })
}

// Version is the anthropic-version header value the codec speaks.
const Version = "2023-06-01"

var versionHeader = []string{Version}

// Client calls an Anthropic upstream.
type Client struct {
	hc   *http.Client
	idle time.Duration
}

var _ provider.Client = (*Client)(nil)

// New builds the client; the stream idle timeout comes from hc when it was
// built by provider.NewHTTPClient.
func New(hc *http.Client) *Client {
	return &Client{hc: hc, idle: provider.StreamIdleTimeout(hc)}
}

func (c *Client) call(t provider.Target, req *llm.Request, stream bool) (provider.Call, error) {
	body, err := messages.EncodeRequest(req, t.Model)
	if err != nil {
		return provider.Call{}, err
	}
	h := make(http.Header, 4)
	h["X-Api-Key"] = []string{t.APIKey.Reveal()}
	h["Anthropic-Version"] = versionHeader
	return provider.Call{
		Name: "anthropic",
		// The SDK convention: api_base is the host root, the path is ours.
		URL:    strings.TrimRight(t.BaseURL, "/") + "/v1/messages",
		Header: h, Body: body, Stream: stream,
	}, nil
}

// Complete sends a non-streaming messages request.
func (c *Client) Complete(ctx context.Context, t provider.Target, req *llm.Request) (*llm.Response, error) {
	if req.Stream {
		r := *req
		r.Stream = false
		req = &r
	}
	call, err := c.call(t, req, false)
	if err != nil {
		return nil, err
	}
	return provider.Complete(ctx, c.hc, call, messages.DecodeResponse)
}

// Stream sends a streaming messages request; it fails before the first
// event when the upstream answers non-2xx or not with an event stream.
func (c *Client) Stream(ctx context.Context, t provider.Target, req *llm.Request) (llm.Stream, error) {
	if !req.Stream {
		r := *req
		r.Stream = true
		req = &r
	}
	call, err := c.call(t, req, true)
	if err != nil {
		return nil, err
	}
	return provider.OpenStream(ctx, c.hc, call, c.idle, newDecoder)
}

func newDecoder(r io.Reader) provider.EventDecoder { return messages.NewStreamDecoder(r) }
