package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is a tiny chat-completions stand-in: JSON for plain requests, a
// slow SSE stream when the body asks for "stream":true.
func upstream(t *testing.T, chunkEvery time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Fail") != "" {
			http.Error(w, "no", http.StatusTeapot)
			return
		}
		if !bytes.Contains(b, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; i < 1000; i++ {
			if _, err := io.WriteString(w, "data: {\"i\":1}\n\n"); err != nil {
				return
			}
			fl.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(chunkEvery):
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func loadJSON(t *testing.T, args ...string) *Result {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(append(args, "-json"), &out, &errb); err != nil {
		t.Fatalf("run %v: %v\n%s", args, err, errb.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bad JSON %q: %v", out.String(), err)
	}
	return &r
}

func TestClosedLoop(t *testing.T) {
	srv := upstream(t, time.Millisecond)
	r := loadJSON(t, "-url", srv.URL+"/v1/chat/completions", "-body", `{"model":"m"}`,
		"-c", "4", "-duration", "300ms", "-warmup", "50ms", "-pid", itoa(os.Getpid()))
	if r.Mode != "closed" || r.Requests < 10 || r.Errors != 0 || r.Non2xx != 0 {
		t.Fatalf("unexpected result %+v", r)
	}
	if !(r.P50ms > 0 && r.P50ms <= r.P90ms && r.P90ms <= r.P99ms && r.P99ms <= r.Maxms) {
		t.Fatalf("percentiles out of order: %+v", r)
	}
	if r.RSSKiB == 0 {
		t.Fatalf("no RSS for -pid: %+v", r)
	}
}

func TestOpenLoopRate(t *testing.T) {
	srv := upstream(t, time.Millisecond)
	r := loadJSON(t, "-url", srv.URL, "-body", `{"model":"m"}`, "-rate", "200",
		"-c", "8", "-duration", "500ms", "-warmup", "100ms")
	// 200 rps for 0.5 s is 100 scheduled sends in the window.
	if r.Mode != "open" || r.Requests < 95 || r.Requests > 101 || r.Errors != 0 {
		t.Fatalf("unexpected result %+v", r)
	}
	if r.SvcP50ms <= 0 || r.SvcP50ms > r.P50ms+0.001 {
		t.Fatalf("service time should not exceed latency from schedule: %+v", r)
	}
}

func TestOpenLoopCountsQueueingAgainstServer(t *testing.T) {
	// One connection, a 20 ms server, 100 rps: the server keeps up with only
	// half the schedule, so latency from the scheduled time must grow far past
	// the 20 ms service time (a closed-loop or send-time measure would hide it).
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(20 * time.Millisecond)
	}))
	defer srv.Close()
	r := loadJSON(t, "-url", srv.URL, "-rate", "100", "-c", "1", "-duration", "400ms", "-warmup", "0s", "-timeout", "5s")
	if r.P99ms < 100 {
		t.Fatalf("p99 %.1f ms hides queueing (service time ~20 ms)", r.P99ms)
	}
}

func TestDataMatcher(t *testing.T) {
	cases := []struct {
		parts []string
		want  bool
	}{
		{[]string{"data: {}"}, true},
		{[]string{"ev", "ent: x\nda", "ta", ": {}"}, true},
		{[]string{"ddata:"}, true},
		{[]string{": comment\n\n", "event: ping\n"}, false},
		{[]string{"dat", "x:"}, false},
	}
	for _, c := range cases {
		var m dataMatcher
		got := false
		for _, p := range c.parts {
			if m.feed([]byte(p)) {
				got = true
				break
			}
		}
		if got != c.want {
			t.Errorf("%q: got %v", c.parts, got)
		}
	}
}

func TestStreamTTFBShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": comment\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(10 * time.Millisecond)
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	r := loadJSON(t, "-url", srv.URL, "-body", `{"stream":true}`, "-stream", "-rate", "50",
		"-duration", "300ms", "-warmup", "0s")
	if r.Requests < 10 || r.Errors != 0 {
		t.Fatalf("unexpected result %+v", r)
	}
	// First data frame after ~10 ms, end after ~30 ms; the comment must not count.
	if r.TTFBP50ms < 9 || r.TTFBP50ms >= r.P50ms {
		t.Fatalf("ttfb p50 %.2f ms, total p50 %.2f ms", r.TTFBP50ms, r.P50ms)
	}
}

func TestHold(t *testing.T) {
	srv := upstream(t, 50*time.Millisecond)
	start := time.Now()
	r := loadJSON(t, "-url", srv.URL, "-body", `{"stream":true}`, "-hold", "50",
		"-holdfor", "300ms", "-timeout", "5s", "-pid", itoa(os.Getpid()))
	if r.Opened != 50 || r.HeldAtEnd != 50 || r.Errors != 0 {
		t.Fatalf("unexpected result %+v", r)
	}
	if r.RSSBeforeKiB == 0 || r.RSSHeldKiB == 0 {
		t.Fatalf("no RSS samples: %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("hold took %s", d)
	}
}

func TestNon2xxCounted(t *testing.T) {
	srv := upstream(t, time.Millisecond)
	r := loadJSON(t, "-url", srv.URL, "-header", "X-Fail: 1", "-c", "2", "-duration", "100ms", "-warmup", "0s")
	if r.Non2xx == 0 || r.Non2xx != r.Requests || r.FirstNon2xx != http.StatusTeapot {
		t.Fatalf("unexpected result %+v", r)
	}
}

func TestSetup(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-admin-bench" {
			w.WriteHeader(401)
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		paths = append(paths, r.URL.Path)
		switch r.URL.Path {
		case "/admin/providers":
			if body["api_base"] != "http://127.0.0.1:1/v1" || body["type"] != "openai" {
				t.Errorf("provider body %v", body)
			}
			w.WriteHeader(409) // already there: reused
		case "/admin/models/aliases":
			if body["alias"] != "bench-model" || body["provider"] != "mock" {
				t.Errorf("alias body %v", body)
			}
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"a"}`)
		case "/admin/keys":
			if body["rpm_limit"].(float64) < 1e6 || body["budget_limit"].(float64) < 1e3 {
				t.Errorf("key body %v", body)
			}
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"k","key":"sk-gw-abc"}`)
		}
	}))
	defer srv.Close()
	var out bytes.Buffer
	if err := run([]string{"setup", "-admin", srv.URL, "-upstream", "http://127.0.0.1:1/v1"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.String()) != "sk-gw-abc" || len(paths) != 3 {
		t.Fatalf("out %q paths %v", out.String(), paths)
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	put := func(name string, r Result) {
		b, _ := json.Marshal(r)
		os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644)
	}
	put("direct-max", Result{RPS: 10000})
	put("bare-max", Result{RPS: 6000})
	put("sqlite-max", Result{RPS: 2000})
	put("direct-rate", Result{P50ms: 0.3, P99ms: 1.0, CPUusPerReq: 50})
	put("bare-rate", Result{P50ms: 0.5, P99ms: 1.5, CPUusPerReq: 60})
	put("sqlite-rate", Result{P50ms: 0.7, P99ms: 2.5, CPUusPerReq: 150})
	put("direct-stream", Result{TTFBP50ms: 0.4})
	put("sqlite-stream", Result{TTFBP50ms: 1.0})
	put("sqlite-idle", Result{RSSKiB: 30 * 1024})
	put("sqlite-warm", Result{Requests: 100, Non2xx: 100})
	put("sqlite-hold", Result{Hold: 1000, HeldAtEnd: 1000, RSSBeforeKiB: 30000, RSSHeldKiB: 60000, KiBPerStream: 30})
	os.WriteFile(filepath.Join(dir, "pg-skipped.txt"), []byte("Postgres unreachable\n"), 0o644)
	var out bytes.Buffer
	if err := run([]string{"report", "-dir", dir}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"| max throughput vs bare proxy | ≥ 50% | 33% | **MISS** |",
		"| CPU per request at 500 rps vs bare proxy | ≤ 2× | 2.50× | **MISS** |",
		"| added p50 vs direct at 500 rps | ≤ 0.5 ms | +0.400 ms | PASS |",
		"| added p99 vs direct at 500 rps | ≤ 2.0 ms | +1.500 ms | PASS |",
		"| added stream first-chunk p50 vs direct | ≤ 1.0 ms | +0.600 ms | PASS |",
		"| RSS per held stream | ≤ 32 KiB | 30.0 KiB (1000/1000 held) | PASS |",
		"| idle RSS | ≤ 50 MiB | 30.0 MiB (sqlite: 100 failed) | **INVALID** |",
		"| no errors, no non-2xx | 0 | 100 of 1100 | **MISS** |",
		"2000 (0.20× direct, 0.33× bare)",
		"skipped | SKIP |",
		"Postgres unreachable",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q\n%s", want, s)
		}
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
