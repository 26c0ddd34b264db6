package fault

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
)

// TestCircuitBreaker: consecutive upstream failures open the circuit; an open
// provider is refused at once (simple alias) or skipped (load_balance,
// fallback); /health follows unhealthy -> degraded (probe) -> healthy.
func TestCircuitBreaker(t *testing.T) {
	const cooldown = 600 * time.Millisecond
	g := newGW(t, "sqlite", func(c *config.Config) {
		c.Circuit.FailureThreshold = 3
		c.Circuit.MinRequests = 1000 // only the consecutive rule
		c.Circuit.Cooldown = cooldown
		c.Providers.Retries = 0
	})
	g.provider("good", "openai")
	g.alias("bad-fail", "mock", "bad-model+fail-503")
	g.alias("bad-ok", "mock", "bad-model")
	g.alias("bad-slow", "mock", "bad-model+slow-1500")
	g.routed("lb", "load_balance", [2]string{"mock", "bad-model"}, [2]string{"good", "good-model"})
	g.routed("fb", "fallback", [2]string{"mock", "bad-model"}, [2]string{"good", "good-model"})

	if s := g.providerState("mock"); s != "healthy" {
		t.Fatalf("before failures: mock is %q", s)
	}
	for i := 0; i < 3; i++ {
		resp, raw := g.chat("bad-fail")
		if resp.StatusCode != 502 || errType(t, raw) != "provider_error" {
			t.Fatalf("failure %d: %d %s", i, resp.StatusCode, raw)
		}
	}
	if got := g.mock.Total(); got != 3 {
		t.Fatalf("upstream calls: %d, want 3", got)
	}
	// Open: refused at once, upstream untouched.
	start := time.Now()
	resp, raw := g.chat("bad-ok")
	if resp.StatusCode != 503 || errType(t, raw) != "service_unavailable" {
		t.Fatalf("open circuit: %d %s", resp.StatusCode, raw)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("open circuit answered after %v", d)
	}
	if got := g.mock.Total(); got != 3 {
		t.Fatalf("open circuit called upstream: total %d", got)
	}
	if s := g.providerState("mock"); s != "unhealthy" {
		t.Fatalf("open circuit: /health says mock is %q", s)
	}
	if s := g.providerState("good"); s != "healthy" {
		t.Fatalf("good provider is %q", s)
	}
	// load_balance and fallback skip the open provider.
	for _, alias := range []string{"lb", "fb"} {
		for i := 0; i < 6; i++ {
			resp, raw := g.chat(alias)
			if resp.StatusCode != 200 || resp.Header.Get("X-Gateway-Provider") != "good" {
				t.Fatalf("%s #%d: %d provider=%q %s", alias, i, resp.StatusCode, resp.Header.Get("X-Gateway-Provider"), raw)
			}
		}
	}
	if got := g.mock.Count("bad-model"); got != 0 {
		t.Fatalf("open provider got %d calls", got)
	}
	// After the cool-down one probe goes through: degraded while it runs,
	// healthy once it succeeded.
	time.Sleep(cooldown + 100*time.Millisecond)
	done := make(chan int, 1)
	go func() {
		resp, _ := g.chat("bad-slow")
		done <- resp.StatusCode
	}()
	if !eventually(1200*time.Millisecond, func() bool { return g.providerState("mock") == "degraded" }) {
		t.Fatalf("probe in flight: mock is %q, want degraded", g.providerState("mock"))
	}
	// Only one probe: a second request during the probe is refused.
	if resp, raw := g.chat("bad-ok"); resp.StatusCode != 503 {
		t.Fatalf("second request while probing: %d %s", resp.StatusCode, raw)
	}
	if code := <-done; code != 200 {
		t.Fatalf("probe: %d", code)
	}
	if s := g.providerState("mock"); s != "healthy" {
		t.Fatalf("after a successful probe: mock is %q", s)
	}
	if resp, raw := g.chat("bad-ok"); resp.StatusCode != 200 {
		t.Fatalf("closed again: %d %s", resp.StatusCode, raw)
	}
	// 3 failures + probe + one call; the refused ones never reached upstream.
	g.waitUsage(3+1+12+1+1+1, 5*time.Second)
	if got := g.mock.Total(); got != 3+12+1+1 {
		t.Fatalf("upstream total: %d", got)
	}
}

// TestRetries: a flaky upstream is retried once; a stream that broke after
// its first byte is never retried.
func TestRetries(t *testing.T) {
	g := newGW(t, "sqlite", func(c *config.Config) {
		c.Providers.Retries = 1
		c.Providers.RetryBackoff = 10 * time.Millisecond
	})
	g.alias("flaky", "mock", "m-flaky+flaky-1+fail-503")
	g.alias("broken", "mock", "m-broken+break-stream+chunks-20")

	resp, raw := g.chat("flaky")
	if resp.StatusCode != 200 {
		t.Fatalf("flaky-1 with one retry: %d %s", resp.StatusCode, raw)
	}
	if got := g.mock.Total(); got != 2 {
		t.Fatalf("flaky: %d upstream attempts, want 2", got)
	}
	// A plain 500 ("flaky-1" alone) is not retried on the same target (only
	// connection errors, 502/503/504 and 429 are): it is passed on as 502.
	g.alias("flaky500", "mock", "m-flaky500+flaky-1")
	g.mock.Reset()
	resp, raw = g.chat("flaky500")
	if resp.StatusCode != 502 || errType(t, raw) != "provider_error" || g.mock.Total() != 1 {
		t.Fatalf("flaky-1 (500): %d after %d attempts: %s", resp.StatusCode, g.mock.Total(), raw)
	}
	g.mock.Reset()
	resp, raw = g.chatStream("broken")
	if resp.StatusCode != 200 {
		t.Fatalf("break-stream: %d %s", resp.StatusCode, raw)
	}
	if e := sseError(raw); e == nil {
		t.Fatalf("break-stream: no error event in %s", raw)
	}
	if got := g.mock.Total(); got != 1 {
		t.Fatalf("break-stream: %d upstream calls, want exactly 1 (no retry after the first byte)", got)
	}
	rows := g.waitUsage(3, 5*time.Second)
	for _, r := range rows {
		if r.Model == "broken" && r.Status == 200 {
			t.Fatalf("broken stream recorded as success: %+v", r)
		}
	}
}

// TestTimeouts: a hanging upstream is a 504 within providers.timeout; a
// stalled stream ends with an error event; oversize bodies are 413.
func TestTimeouts(t *testing.T) {
	g := newGW(t, "sqlite", func(c *config.Config) {
		c.Providers.Timeout = 700 * time.Millisecond
		c.Providers.StreamIdleTimeout = 500 * time.Millisecond
		c.Providers.Retries = 0
		c.Server.MaxBodyBytes = 4096
	})
	g.alias("hang", "mock", "m-hang+hang")
	g.alias("gappy", "mock", "m-gap+gap-3000+chunks-3")

	start := time.Now()
	resp, raw := g.chat("hang")
	el := time.Since(start)
	if resp.StatusCode != 504 || errType(t, raw) != "timeout_error" {
		t.Fatalf("hang: %d %s", resp.StatusCode, raw)
	}
	if el < 600*time.Millisecond || el > 2*time.Second {
		t.Fatalf("hang answered after %v, want about providers.timeout (700ms)", el)
	}

	start = time.Now()
	resp, raw = g.chatStream("gappy")
	el = time.Since(start)
	if resp.StatusCode != 200 {
		t.Fatalf("idle stream: %d %s", resp.StatusCode, raw)
	}
	e := sseError(raw)
	if e == nil || e["type"] != "timeout_error" {
		t.Fatalf("idle stream: want a timeout_error event, got %v in %s", e, raw)
	}
	// The error chunk is the last event (the chat format then closes with [DONE]).
	if ev := sseEvents(raw); len(ev) < 2 || !strings.Contains(ev[len(ev)-2], `"error"`) {
		t.Fatalf("idle stream: the error event is not the last one: %s", raw)
	}
	if el > 2500*time.Millisecond {
		t.Fatalf("idle stream took %v; the 3s gap was not cut at 500ms", el)
	}

	big := `{"model":"x","messages":[{"role":"user","content":"` + strings.Repeat("a", 5000) + `"}]}`
	resp, raw = g.Do("POST", "/v1/chat/completions", big, map[string]string{"Authorization": "Bearer " + g.key})
	if resp.StatusCode != 413 || errType(t, raw) != "invalid_request_error" {
		t.Fatalf("oversize body: %d %s", resp.StatusCode, raw)
	}
	g.waitUsage(2, 5*time.Second)
}

// TestReadHeaderTimeout: main.go sets http.Server.ReadHeaderTimeout from
// server.read_header_timeout; a client that sends half a request line is
// disconnected. The server here is built exactly as main.go builds it.
func TestReadHeaderTimeout(t *testing.T) {
	addr := startBinary(t, map[string]string{"GATEWAY_SERVER_READ_HEADER_TIMEOUT": "300ms"})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("POST /v1/chat/compl")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	if err == nil {
		// Go may answer 408 before closing; either way the connection ends.
		_, err = c.Read(make([]byte, 1024))
	}
	if el := time.Since(start); err == nil || el > 3*time.Second {
		t.Fatalf("half a request line: connection still open after %v (err %v)", el, err)
	}
}
