package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"absent", nil, 0},
		{"seconds", map[string]string{"retry-after": "1"}, time.Second},
		{"fractional seconds", map[string]string{"retry-after": "1.5"}, 1500 * time.Millisecond},
		{"http date", map[string]string{"retry-after": now.Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second},
		{"date in the past", map[string]string{"retry-after": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"retry-after": "soon"}, 0},
		{"negative", map[string]string{"retry-after": "-3"}, 0},
		{"ms wins", map[string]string{"retry-after": "20", "retry-after-ms": "250"}, 250 * time.Millisecond},
		{"bad ms falls back", map[string]string{"retry-after": "2", "retry-after-ms": "x"}, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if got := ParseRetryAfter(h, now); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseErrorBody(t *testing.T) {
	cases := []struct{ body, typ, msg string }{
		{`{"error":{"message":"bad key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, "invalid_request_error", "bad key"},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded"},
		{`{"error":{"code":"DeploymentNotFound","message":"The API deployment does not exist"}}`, "DeploymentNotFound", "The API deployment does not exist"},
		{`{"error":{"code":429,"message":"slow"}}`, "429", "slow"},
		{`{"error":"model not found"}`, "", "model not found"},
		{`{"object":"error","message":"vllm says no","type":"BadRequestError"}`, "BadRequestError", "vllm says no"},
		{`{"detail":"Not Found"}`, "", "Not Found"},
		{`<html>502 Bad Gateway</html>`, "", ""},
	}
	for _, tc := range cases {
		typ, msg := ParseErrorBody([]byte(tc.body))
		if typ != tc.typ || msg != tc.msg {
			t.Errorf("%s: got (%q, %q), want (%q, %q)", tc.body, typ, msg, tc.typ, tc.msg)
		}
	}
}

func TestErrorFromResponse(t *testing.T) {
	big := strings.Repeat("x", 2*MaxErrorBody)
	resp := &http.Response{StatusCode: 502, Header: http.Header{"Retry-After": {"3"}}, Body: io.NopCloser(strings.NewReader(big))}
	var ue *UpstreamError
	if err := ErrorFromResponse(resp); !errors.As(err, &ue) || ue.Status != 502 || ue.RetryAfter != 3*time.Second || len(ue.Message) > 512 {
		t.Fatalf("%+v", ue)
	}
	resp = &http.Response{StatusCode: 503, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
	if err := ErrorFromResponse(resp); !errors.As(err, &ue) || ue.Message != "Service Unavailable" {
		t.Fatalf("%+v", ue)
	}
}

func TestNewHTTPClient(t *testing.T) {
	hc := NewHTTPClient(HTTPOptions{MaxIdleConnsPerHost: 7, FirstByteTimeout: 3 * time.Second, StreamIdleTimeout: 5 * time.Second})
	if hc.Timeout != 0 {
		t.Fatal("a total client timeout would cut long streams")
	}
	tr := hc.Transport.(*transport).Transport
	if tr.MaxIdleConnsPerHost != 7 || tr.MaxIdleConns != 1000 || tr.ResponseHeaderTimeout != 3*time.Second ||
		!tr.ForceAttemptHTTP2 || tr.TLSHandshakeTimeout != 10*time.Second {
		t.Fatalf("transport %+v", tr)
	}
	if StreamIdleTimeout(hc) != 5*time.Second || StreamIdleTimeout(&http.Client{}) != 0 {
		t.Fatal("StreamIdleTimeout")
	}
	hc.CloseIdleConnections() // promoted through the wrapper
}

func TestIdleTimeoutErrorClassifies(t *testing.T) {
	var err error = &IdleTimeoutError{Idle: time.Second}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("must unwrap to DeadlineExceeded")
	}
	var te interface{ Timeout() bool }
	if !errors.As(err, &te) || !te.Timeout() {
		t.Fatal("must be a timeout")
	}
}
