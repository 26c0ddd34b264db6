// Package openai is the provider client for OpenAI chat completions and every
// server that speaks it (vLLM, Ollama, Groq, Together, ...), and for Azure
// OpenAI, which is the same wire format behind another URL scheme and
// credential header: one client, two small strategies, so a fix to the
// shared path reaches both.
package openai

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llmgw/gateway/services/chat"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/provider"
)

func init() {
	provider.Register(provider.TypeOpenAI, func(hc *http.Client) provider.Client { return New(hc) })
	provider.Register(provider.TypeAzure, func(hc *http.Client) provider.Client { return NewAzure(hc) })
}

// DefaultAzureAPIVersion is used when an Azure target has no api_version
// (the GA version named in PROTOCOLS.md), because Azure rejects a request
// without one.
const DefaultAzureAPIVersion = "2024-10-21"

// strategy is what differs between OpenAI and Azure: where to send the
// request and how to present the key.
type strategy struct {
	name string
	url  func(t provider.Target) string
	auth func(h http.Header, key string)
}

var openAIStrategy = strategy{
	name: "openai",
	// {api_base}/chat/completions: api_base carries /v1 as in the SDKs.
	url: func(t provider.Target) string { return trimBase(t.BaseURL) + "/chat/completions" },
	auth: func(h http.Header, key string) {
		if key != "" { // local servers (Ollama, vLLM) often run without a key
			h["Authorization"] = []string{"Bearer " + key}
		}
	},
}

var azureStrategy = strategy{
	name: "azure",
	// The deployment in the path selects the model; the body's model is ignored by Azure.
	url: func(t provider.Target) string {
		v := t.APIVersion
		if v == "" {
			v = DefaultAzureAPIVersion
		}
		return trimBase(t.BaseURL) + "/openai/deployments/" + url.PathEscape(t.Model) +
			"/chat/completions?api-version=" + url.QueryEscape(v)
	},
	auth: func(h http.Header, key string) { h["Api-Key"] = []string{key} },
}

// trimBase drops trailing slashes; Target.BaseURL should already be trimmed,
// but a double slash would make some servers answer 404.
func trimBase(s string) string { return strings.TrimRight(s, "/") }

// Client calls an OpenAI-format upstream.
type Client struct {
	hc   *http.Client
	idle time.Duration
	s    strategy
}

var _ provider.Client = (*Client)(nil)

// New is the client for OpenAI and OpenAI-compatible servers. The stream
// idle timeout comes from hc when it was built by provider.NewHTTPClient.
func New(hc *http.Client) *Client {
	return &Client{hc: hc, idle: provider.StreamIdleTimeout(hc), s: openAIStrategy}
}

// NewAzure is the client for Azure OpenAI: deployment URL and api-key header.
func NewAzure(hc *http.Client) *Client {
	return &Client{hc: hc, idle: provider.StreamIdleTimeout(hc), s: azureStrategy}
}

func (c *Client) call(t provider.Target, req *llm.Request, stream bool) (provider.Call, error) {
	body, err := chat.EncodeRequest(req, t.Model)
	if err != nil {
		return provider.Call{}, err
	}
	h := make(http.Header, 4)
	c.s.auth(h, t.APIKey.Reveal())
	return provider.Call{Name: c.s.name, URL: c.s.url(t), Header: h, Body: body, Stream: stream}, nil
}

// Complete sends a non-streaming chat completion.
func (c *Client) Complete(ctx context.Context, t provider.Target, req *llm.Request) (*llm.Response, error) {
	if req.Stream {
		// The codec adds stream fields when req.Stream is set; Complete
		// must send a plain request, so encode a shallow copy.
		r := *req
		r.Stream, r.IncludeUsage = false, false
		req = &r
	}
	call, err := c.call(t, req, false)
	if err != nil {
		return nil, err
	}
	return provider.Complete(ctx, c.hc, call, chat.DecodeResponse)
}

// Stream sends a streaming chat completion; it fails before the first event
// when the upstream answers non-2xx or not with an event stream, so the
// caller can still fall back.
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

func newDecoder(r io.Reader) provider.EventDecoder { return chat.NewStreamDecoder(r) }
