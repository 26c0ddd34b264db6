// Package provider defines the one interface every upstream client implements
// and the registry that maps a provider type to its client. Adding a provider
// type is one new package plus one Register line in services/provider/all.
package provider

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/secret"
)

// Type names a provider's wire protocol.
type Type string

const (
	TypeOpenAI    Type = "openai"
	TypeAnthropic Type = "anthropic"
	TypeAzure     Type = "azure"
)

// InferType applies the contract's rule when a provider has no explicit type.
func InferType(name, apiBase string) Type {
	s := strings.ToLower(name + " " + apiBase)
	switch {
	case strings.Contains(s, "anthropic"):
		return TypeAnthropic
	case strings.Contains(s, "azure"):
		return TypeAzure
	}
	return TypeOpenAI
}

// Target is one concrete upstream call destination.
type Target struct {
	ProviderID   string
	ProviderName string
	Type         Type
	BaseURL      string // without trailing slash
	APIKey       secret.Secret
	APIVersion   string
	Model        string // upstream model (Azure: deployment name)
}

// Client calls one kind of upstream.
type Client interface {
	// Complete sends a non-streaming request.
	Complete(ctx context.Context, t Target, req *llm.Request) (*llm.Response, error)
	// Stream fails only if the upstream failed before its first event.
	Stream(ctx context.Context, t Target, req *llm.Request) (llm.Stream, error)
}

// UpstreamError is a non-2xx answer (or an error event) from an upstream.
type UpstreamError struct {
	Status     int           // HTTP status from upstream (0 for a mid-stream error event)
	Type       string        // upstream error type when it said one
	Message    string        // upstream message, safe to show the client
	RetryAfter time.Duration // from Retry-After / retry-after, 0 when absent
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("upstream answered %d %s: %s", e.Status, e.Type, e.Message)
}

// Retryable reports whether another target (or a retry) may succeed.
func (e *UpstreamError) Retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500 || e.Status == 0
}

// MalformedError means the upstream answered 2xx with a body the gateway
// could not read.
type MalformedError struct{ Err error }

func (e *MalformedError) Error() string { return "unreadable upstream reply: " + e.Err.Error() }
func (e *MalformedError) Unwrap() error { return e.Err }

// Factory builds a client around the shared HTTP client.
type Factory func(hc *http.Client) Client

var (
	mu        sync.RWMutex
	factories = map[Type]Factory{}
)

// Register makes a provider type available; called from init in each client package.
func Register(t Type, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	factories[t] = f
}

// Types lists the registered provider types, sorted.
func Types() []Type {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Type, 0, len(factories))
	for t := range factories {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Registry holds one client per provider type, sharing one HTTP client.
type Registry struct{ clients map[Type]Client }

// NewRegistry instantiates every registered provider type.
func NewRegistry(hc *http.Client) *Registry {
	mu.RLock()
	defer mu.RUnlock()
	r := &Registry{clients: make(map[Type]Client, len(factories))}
	for t, f := range factories {
		r.clients[t] = f(hc)
	}
	return r
}

// Client returns the client for t.
func (r *Registry) Client(t Type) (Client, bool) {
	c, ok := r.clients[t]
	return c, ok
}

// NewRegistryOf builds a registry from explicit clients (tests, embedding).
func NewRegistryOf(clients map[Type]Client) *Registry { return &Registry{clients: clients} }
