package provider

import (
	"net"
	"net/http"
	"time"
)

// HTTPOptions tunes the one HTTP client every provider client shares.
// Zero fields take the defaults noted.
type HTTPOptions struct {
	// MaxIdleConns bounds the keep-alive pool over all hosts (default 1000).
	MaxIdleConns int
	// MaxIdleConnsPerHost bounds it per upstream host (default 100). Go's
	// default of 2 makes a busy gateway re-dial for almost every request.
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes pooled connections unused this long (default 90s).
	IdleConnTimeout time.Duration
	// ConnectTimeout bounds the TCP dial (default 10s).
	ConnectTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake (default 10s).
	TLSHandshakeTimeout time.Duration
	// FirstByteTimeout bounds the wait for the response headers after the
	// request is written (http.Transport.ResponseHeaderTimeout); 0 = none.
	FirstByteTimeout time.Duration
	// StreamIdleTimeout cancels a stream when no byte arrived for this long;
	// 0 = none. It is carried by the client NewHTTPClient returns, because a
	// Factory receives only the *http.Client (see StreamIdleTimeout).
	StreamIdleTimeout time.Duration
}

// transport is http.Transport plus the options that are not transport
// settings but belong to the same configuration (the stream idle timeout).
// Embedding keeps RoundTrip and CloseIdleConnections.
type transport struct {
	*http.Transport
	streamIdle time.Duration
}

// NewHTTPClient builds the shared upstream client. It has no Client.Timeout
// on purpose: a stream may legitimately last minutes, so the whole-call
// budget is the caller's context deadline, the first byte is bounded by
// FirstByteTimeout and the gaps inside a stream by StreamIdleTimeout.
func NewHTTPClient(o HTTPOptions) *http.Client {
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = 1000
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 100
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = 10 * time.Second
	}
	dialer := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          o.MaxIdleConns,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		IdleConnTimeout:       o.IdleConnTimeout,
		TLSHandshakeTimeout:   o.TLSHandshakeTimeout,
		ResponseHeaderTimeout: o.FirstByteTimeout,
		ExpectContinueTimeout: time.Second,
		// Upstreams stream text; transparent gzip would buffer it and
		// cost CPU for little gain on short JSON replies.
		DisableCompression: true,
		// Each pooled connection keeps its write buffer for life. Request
		// headers fit in 1 KiB, and bufio writes a larger body straight
		// through, so 4 KiB (the default) only costs memory per stream.
		WriteBufferSize: 1 << 10,
	}
	return &http.Client{Transport: &transport{Transport: t, streamIdle: o.StreamIdleTimeout}}
}

// StreamIdleTimeout is the idle timeout hc was built with by NewHTTPClient,
// 0 for any other client (tests may pass a plain http.Client).
func StreamIdleTimeout(hc *http.Client) time.Duration {
	if t, ok := hc.Transport.(*transport); ok {
		return t.streamIdle
	}
	return 0
}
