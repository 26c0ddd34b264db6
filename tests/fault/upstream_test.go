package fault

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
)

// TestUpstreamFaults: what the client sees for each upstream misbehaviour,
// how many upstream calls were made, and exactly one usage record per request.
func TestUpstreamFaults(t *testing.T) {
	g := newGW(t, "sqlite", func(c *config.Config) {
		c.Providers.Timeout = 500 * time.Millisecond
		c.Providers.Retries = 1
		c.Providers.RetryBackoff = 5 * time.Millisecond
		c.Circuit.FailureThreshold = 100000
		c.Circuit.MinRequests = 100000
	})
	g.provider("ant", "anthropic")
	cases := []struct {
		name      string
		directive string
		stream    bool
		status    int    // HTTP status the client got
		typ       string // error type: envelope, or the stream's error event
		calls     int    // upstream calls
	}{
		// Before any byte: connection errors are retried once, then 503 (not reachable).
		{"reset", "reset", false, 503, "service_unavailable", 2},
		{"reset_stream", "reset", true, 503, "service_unavailable", 2},
		// A hang is cut at providers.timeout; a timeout is not retried on the same target.
		{"hang", "hang", false, 504, "timeout_error", 1},
		{"hang_stream", "hang", true, 504, "timeout_error", 1},
		// Garbage is the upstream's fault: 502, not retried.
		{"malformed", "malformed", false, 502, "provider_error", 1},
		{"malformed_stream", "malformed", true, 502, "provider_error", 1},
		// A 503 from a single target is retried, then passed on as 502.
		{"fail_503", "fail-503", false, 502, "provider_error", 2},
		// Non-streaming body cut short: an unexpected EOF, retried once.
		{"break_body", "break-stream", false, 503, "service_unavailable", 2},
		// After the first byte: 200, an error event, never retried.
		{"break_stream", "break-stream+chunks-10", true, 200, "provider_error", 1},
		{"error_event", "error-event+chunks-10", true, 200, "provider_error", 1},
	}
	for _, tc := range cases {
		alias := "f-" + tc.name
		g.alias(alias, "mock", "u-"+tc.name+"+"+tc.directive)
		var (
			status int
			raw    []byte
		)
		start := time.Now()
		if tc.stream {
			resp, body := g.chatStream(alias)
			status, raw = resp.StatusCode, body
		} else {
			resp, body := g.chat(alias)
			status, raw = resp.StatusCode, body
		}
		var typ string
		if status == 200 {
			if e := sseError(raw); e != nil {
				typ, _ = e["type"].(string)
			}
		} else {
			typ = errType(t, raw)
		}
		calls := g.mock.Count("u-" + tc.name + "+" + tc.directive)
		got := fmt.Sprintf("%d %s calls=%d", status, typ, calls)
		want := fmt.Sprintf("%d %s calls=%d", tc.status, tc.typ, tc.calls)
		if got != want {
			t.Errorf("%s: got %s, want %s (%v): %s", tc.name, got, want, time.Since(start), raw)
		}
	}
	// Anthropic wire format, mid-stream break: an `event: error` frame.
	g.alias("ant-break", "ant", "ant-break+break-stream+chunks-10")
	resp, raw := g.Do("POST", "/v1/messages", map[string]any{
		"model": "ant-break", "max_tokens": 50, "stream": true,
		"messages": []map[string]any{{"role": "user", "content": "hi"}},
	}, map[string]string{"Authorization": "Bearer " + g.key})
	if resp.StatusCode != 200 || !strings.Contains(string(raw), "event: error") || g.mock.Count("ant-break+break-stream+chunks-10") != 1 {
		t.Errorf("anthropic break-stream: %d calls=%d %s", resp.StatusCode, g.mock.Count("ant-break+break-stream+chunks-10"), raw)
	}
	rows := g.waitUsage(len(cases)+1, 5*time.Second)
	byModel := map[string]int{}
	for _, r := range rows {
		byModel[r.Model]++
		if r.Status == 200 && r.Model != "f-none" {
			t.Errorf("failed request recorded with status 200: %+v", r)
		}
	}
	for _, tc := range cases {
		if n := byModel["f-"+tc.name]; n != 1 {
			t.Errorf("%s: %d usage records, want 1", tc.name, n)
		}
	}
}
