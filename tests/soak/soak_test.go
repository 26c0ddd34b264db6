// Package soak runs mixed traffic through the real gateway for a while and
// checks that nothing leaks: usage totals equal the traffic sent, goroutines
// and heap return to their baseline, and every status is in the contract's
// table. Run with `make soak` (GATEWAY_SOAK=1; SOAK_DURATION, default 90s).
package soak

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/tests/testenv"
)

const (
	idlePerHost    = 4
	goroutineSlack = 3*idlePerHost + 8
)

// contractStatuses are the statuses the contract's error table allows.
var contractStatuses = map[int]bool{200: true, 400: true, 401: true, 402: true, 403: true, 404: true, 429: true, 502: true, 503: true, 504: true}

type scenario struct {
	path   string // /v1/chat/completions or /v1/messages
	alias  string
	stream bool
}

func TestSoak(t *testing.T) {
	if os.Getenv("GATEWAY_SOAK") != "1" {
		msg := "soak test skipped: set GATEWAY_SOAK=1 (or run `make soak`)"
		fmt.Println(msg)
		t.Skip(msg)
	}
	duration := 90 * time.Second
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive Go duration", s)
		}
		duration = d
	}

	mock := mockupstream.New()
	mock.SetRecording(false) // counts only: recording would grow the heap
	defer mock.Close()
	env := testenv.New(t, "sqlite", func(c *config.Config) {
		c.Usage.FlushInterval = 100 * time.Millisecond
		c.Providers.Retries = 1
		c.Providers.RetryBackoff = 5 * time.Millisecond
		c.Providers.Timeout = 5 * time.Second
		// Failures are injected on purpose; let circuits open and recover
		// quickly so that path is soaked too.
		c.Circuit.FailureThreshold = 20
		c.Circuit.Cooldown = 500 * time.Millisecond
		// A small keep-alive pool towards the upstream: idle pooled
		// connections (3 goroutines each, client and mock side) are the only
		// goroutines allowed to outlive the traffic.
		c.Providers.MaxIdleConnsPerHost = idlePerHost
	})
	// Failing aliases use their own providers (same mock), so their open
	// circuits do not starve the healthy traffic.
	for _, p := range [][2]string{{"oai", "openai"}, {"ant", "anthropic"}, {"oai-bad", "openai"}, {"ant-bad", "anthropic"}} {
		env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": p[0], "type": p[1], "api_base": mock.URL(), "api_key": "sk-up"})
	}
	alias := func(name, prov, model string) {
		env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{
			"alias": name, "provider": prov, "model": model, "routing_type": "simple",
			"input_price_per_1k": 0.001, "output_price_per_1k": 0.002,
		})
	}
	alias("oai-ok", "oai", "gpt-4o+chunks-8")
	alias("ant-ok", "ant", "claude+chunks-8")
	alias("oai-flaky", "oai-bad", "flaky-model+flaky-50+fail-503")
	alias("ant-503", "ant-bad", "claude-down+fail-503")
	alias("oai-break", "oai", "gpt-break+break-stream+chunks-8")
	alias("ant-break", "ant", "claude-break+break-stream+chunks-8")
	env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{
		"alias": "mixed", "routing_type": "fallback",
		"routing_config": map[string]any{"chain": []map[string]any{
			{"provider": "oai-bad", "model": "gpt-mixed+fail-503"}, {"provider": "ant", "model": "claude-mixed"},
		}},
		"input_price_per_1k": 0.001, "output_price_per_1k": 0.002,
	})
	key := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "soak"})["key"].(string)

	var scenarios []scenario
	for _, a := range []string{"oai-ok", "ant-ok", "oai-ok", "ant-ok", "oai-flaky", "ant-503", "oai-break", "ant-break", "mixed"} {
		for _, p := range []string{"/v1/chat/completions", "/v1/messages"} {
			for _, s := range []bool{false, true} {
				scenarios = append(scenarios, scenario{p, a, s})
			}
		}
	}

	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	settle := func() {
		tr.CloseIdleConnections()
		runtime.GC()
		time.Sleep(200 * time.Millisecond)
	}
	var (
		sent     atomic.Int64
		mu       sync.Mutex
		statuses = map[int]int{}
		problems []string
		wg       sync.WaitGroup
	)
	problem := func(s string) {
		mu.Lock()
		if len(problems) < 20 {
			problems = append(problems, s)
		}
		mu.Unlock()
	}
	const workers = 12
	traffic := func(d time.Duration, seedBase uint64) {
		deadline := time.Now().Add(d)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, seed*7+1))
				for time.Now().Before(deadline) {
					sc := scenarios[rng.IntN(len(scenarios))]
					body := map[string]any{
						"model": sc.alias, "stream": sc.stream, "max_tokens": 64,
						"messages": []map[string]any{{"role": "user", "content": "soak traffic please answer"}},
					}
					raw, _ := json.Marshal(body)
					req, _ := http.NewRequest("POST", env.BaseURL+sc.path, bytes.NewReader(raw))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					sent.Add(1)
					resp, err := client.Do(req)
					if err != nil {
						problem(fmt.Sprintf("%s %s: transport error %v", sc.path, sc.alias, err))
						continue
					}
					out, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						problem(fmt.Sprintf("%s %s: reading body: %v", sc.path, sc.alias, err))
					}
					mu.Lock()
					statuses[resp.StatusCode]++
					mu.Unlock()
					if !contractStatuses[resp.StatusCode] {
						problem(fmt.Sprintf("%s %s: status %d not in the contract: %s", sc.path, sc.alias, resp.StatusCode, out))
					}
					if resp.StatusCode == 200 && sc.stream && strings.HasSuffix(sc.alias, "-ok") &&
						sc.path == "/v1/chat/completions" && !bytes.Contains(out, []byte("data: [DONE]")) {
						problem(fmt.Sprintf("%s %s: healthy stream without [DONE]", sc.path, sc.alias))
					}
				}
			}(seedBase + uint64(w+1))
		}
		wg.Wait()
	}
	// Warm-up with the same concurrency, so pooled keep-alive connections
	// (client -> gateway -> upstream) are part of the baseline, not leaks.
	traffic(2*time.Second, 1000)
	settle()
	baseG := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseHeap := ms.HeapAlloc

	traffic(duration, 0)
	total := sent.Load()
	t.Logf("soak: %d requests (%v plus a 2s warm-up); statuses %v", total, duration, sortedCounts(statuses))
	for _, p := range problems {
		t.Error(p)
	}

	// Usage totals equal the traffic sent (every request is recorded once).
	var got int64
	ok := waitFor(20*time.Second, func() bool {
		resp, raw := env.Admin("GET", "/admin/usage/stats", nil)
		if resp.StatusCode != 200 {
			return false
		}
		var st struct {
			Totals struct {
				Requests int64 `json:"requests"`
			} `json:"totals"`
		}
		_ = json.Unmarshal(raw, &st)
		got = st.Totals.Requests
		return got == total
	})
	if !ok {
		t.Errorf("usage stats count %d requests, %d were sent", got, total)
	}
	var distinct int64
	if err := env.App.DB.Raw("SELECT COUNT(DISTINCT request_id) FROM usage_records").Scan(&distinct).Error; err != nil {
		t.Logf("distinct request ids not checked: %v", err)
	} else if distinct != total {
		t.Errorf("distinct usage request ids %d, want %d", distinct, total)
	}

	// Goroutines and heap return to the baseline.
	var g int
	if !waitFor(15*time.Second, func() bool { settle(); g = runtime.NumGoroutine(); return g <= baseG+goroutineSlack }) {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("goroutines: %d after the soak, baseline %d\n%s", g, baseG, buf[:n])
	}
	settle()
	runtime.ReadMemStats(&ms)
	const slack = 32 << 20
	if ms.HeapAlloc > baseHeap*2+slack {
		t.Errorf("heap: %d MiB after the soak, baseline %d MiB", ms.HeapAlloc>>20, baseHeap>>20)
	}
	t.Logf("goroutines %d (baseline %d), heap %d MiB (baseline %d MiB)", g, baseG, ms.HeapAlloc>>20, baseHeap>>20)
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sortedCounts(m map[int]int) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%d:%d ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}
