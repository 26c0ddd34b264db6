package limits

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/llmgw/gateway/app"
	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/tests/testenv"
)

type figures struct {
	Group        string  `json:"group"`
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	TotalTokens  int64   `json:"total_tokens"`
	Cost         float64 `json:"cost"`
}

type stats struct {
	GroupBy string    `json:"group_by"`
	Data    []figures `json:"data"`
	Totals  figures   `json:"totals"`
}

func getStats(t *testing.T, env *testenv.Env, q url.Values) stats {
	t.Helper()
	today := time.Now().UTC().Format("2006-01-02")
	if q.Get("start_date") == "" {
		q.Set("start_date", today)
		q.Set("end_date", today)
	}
	resp, raw := env.Admin("GET", "/admin/usage/stats?"+q.Encode(), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("stats %v: %d %s", q, resp.StatusCode, raw)
	}
	var s stats
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("stats: %v: %s", err, raw)
	}
	return s
}

func sameFigures(t *testing.T, what string, got figures, want figures) {
	t.Helper()
	if got.Requests != want.Requests || got.Errors != want.Errors || got.InputTokens != want.InputTokens ||
		got.OutputTokens != want.OutputTokens || got.TotalTokens != got.InputTokens+got.OutputTokens || !near(got.Cost, want.Cost) {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
	}
}

func sumRows(rows []figures) figures {
	var s figures
	for _, r := range rows {
		s.Requests += r.Requests
		s.Errors += r.Errors
		s.InputTokens += r.InputTokens
		s.OutputTokens += r.OutputTokens
		s.TotalTokens += r.TotalTokens
		s.Cost += r.Cost
	}
	return s
}

func TestUsageStatsMatchTraffic(t *testing.T) {
	forEachDB(t, func(t *testing.T, driver string) {
		cfg := freshDB(t, driver)
		env := start(t, cfg, nil)
		m := upstream(t)
		pricedAlias(t, env, m.URL())
		provider(t, env, "mockbad", m.URL(), nil)
		alias(t, env, map[string]any{"alias": "bad", "provider": "mockbad", "model": "gpt-x+fail-500",
			"input_price_per_1k": price, "output_price_per_1k": price})
		k1, s1 := key(t, env, map[string]any{})
		k2, s2 := key(t, env, map[string]any{})
		k3, s3 := key(t, env, map[string]any{"rpm_limit": 1})

		expect := func(r result, status int, what string) {
			t.Helper()
			if r.err != nil || r.status != status {
				t.Fatalf("%s: status %d (%v), want %d: %s", what, r.status, r.err, status, r.body)
			}
		}
		// k1: 5 successes + 2 invalid (400).
		rs := burst(5, func(int) result { return chat(env, s1, chatBody("m")) })
		for _, r := range rs {
			expect(r, 200, "k1 success")
		}
		bad := chatBody("m")
		bad["temperature"] = 5
		for i := 0; i < 2; i++ {
			expect(chat(env, s1, bad), 400, "k1 invalid")
		}
		// k2: 3 streams + 4 upstream 500s (502) + 1 unknown model (404),
		stream := chatBody("m")
		stream["stream"] = true
		for i := 0; i < 3; i++ {
			r := chat(env, s2, stream)
			expect(r, 200, "k2 stream")
		}
		// and 2 calls in the Anthropic messages format.
		for i := 0; i < 2; i++ {
			expect(post(env.Client, env.BaseURL, "/v1/messages", s2, chatBody("m")), 200, "k2 messages")
		}
		for i := 0; i < 4; i++ {
			expect(chat(env, s2, chatBody("bad")), 502, "k2 upstream 500")
		}
		expect(chat(env, s2, chatBody("nope")), 404, "k2 unknown model")
		// k3: one success and one 429.
		expect(chat(env, s3, chatBody("m")), 200, "k3 success")
		expect(chat(env, s3, chatBody("m")), 429, "k3 rate limited")

		// Reopen on the same database: every record was flushed at Close.
		stop(t, env)
		env = start(t, cfg, nil)

		ok := func(n int64) figures {
			return figures{Requests: n, InputTokens: inTok * n, OutputTokens: outTok * n, Cost: callCost * float64(n)}
		}
		errs := func(n int64) figures { return figures{Requests: n, Errors: n} }
		add := func(fs ...figures) figures { return sumRows(fs) }

		total := add(ok(5), errs(2), ok(5), errs(4), errs(1), ok(1), errs(1))
		all := getStats(t, env, url.Values{})
		t.Logf("totals %+v", all.Totals)
		sameFigures(t, "totals", all.Totals, total)
		for _, g := range []string{"day", "hour", "provider", "model", "key"} {
			s := getStats(t, env, url.Values{"group_by": {g}})
			sameFigures(t, g+" totals", s.Totals, total)
			sameFigures(t, g+" rows summed", sumRows(s.Data), total)
			byGroup := map[string]figures{}
			for _, r := range s.Data {
				byGroup[r.Group] = r
			}
			switch g {
			case "day":
				if len(s.Data) != 1 || s.Data[0].Group != time.Now().UTC().Format("2006-01-02") {
					t.Errorf("day rows %+v", s.Data)
				}
			case "key":
				sameFigures(t, "key k1", byGroup[k1], add(ok(5), errs(2)))
				sameFigures(t, "key k2", byGroup[k2], add(ok(5), errs(4), errs(1)))
				sameFigures(t, "key k3", byGroup[k3], add(ok(1), errs(1)))
			case "model":
				// A body that fails validation is recorded under the model it names.
				sameFigures(t, "model m", byGroup["m"], add(ok(11), errs(3)))
				sameFigures(t, "model bad", byGroup["bad"], errs(4))
				sameFigures(t, "model nope", byGroup["nope"], errs(1))
			case "provider":
				sameFigures(t, "provider mock", byGroup["mock"], ok(11))
				sameFigures(t, "provider mockbad", byGroup["mockbad"], errs(4))
				t.Logf("provider groups %+v", s.Data)
			}
		}
		sameFigures(t, "filter key_id", getStats(t, env, url.Values{"key_id": {k2}}).Totals, add(ok(5), errs(5)))
		sameFigures(t, "filter provider", getStats(t, env, url.Values{"provider": {"mockbad"}}).Totals, errs(4))
		sameFigures(t, "filter model", getStats(t, env, url.Values{"model": {"m"}, "key_id": {k1}}).Totals, add(ok(5), errs(2)))
		yesterday := time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")
		sameFigures(t, "yesterday", getStats(t, env, url.Values{"start_date": {yesterday}, "end_date": {yesterday}}).Totals, figures{})
	})
}

// TestShutdownUnderLoadLosesNoUsage closes the gateway while 300 requests
// are in flight; every request that got an answer has exactly one record.
func TestShutdownUnderLoadLosesNoUsage(t *testing.T) {
	forEachDB(t, func(t *testing.T, driver string) {
		cfg := freshDB(t, driver, func(c *config.Config) { c.Usage.FlushInterval = time.Hour; c.Usage.BatchSize = 50 })
		// Served like main.go serves: http.Server, Shutdown, then App.Close.
		a, err := app.New(cfg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: a.Handler}
		go func() { _ = srv.Serve(ln) }()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 300}}
		env := &testenv.Env{T: t, Driver: driver, BaseURL: "http://" + ln.Addr().String(), MasterKey: cfg.Admin.MasterKey,
			Config: cfg, App: a, Client: client}
		m := upstream(t)
		provider(t, env, "mock", m.URL(), nil)
		alias(t, env, map[string]any{"alias": "m", "provider": "mock", "model": "gpt-x+slow-200"})
		_, secret := key(t, env, map[string]any{})

		done := make(chan []result)
		go func() {
			done <- burst(300, func(int) result { return chat(env, secret, chatBody("m")) })
		}()
		// Let the requests reach the upstream, then shut down gracefully.
		deadline := time.Now().Add(5 * time.Second)
		for m.Total() < 50 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := a.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		cancel()
		rs := <-done
		completed := map[int]int{}
		answered := int64(0)
		var errSeen []string
		for _, r := range rs {
			if r.err == nil {
				completed[r.status]++
				answered++
			} else if len(errSeen) < 3 {
				errSeen = append(errSeen, r.err.Error())
			}
		}
		t.Logf("300 fired, answered %d %v, upstream saw %d; errors %q", answered, completed, m.Total(), errSeen)
		if answered == 0 {
			t.Fatal("no request answered")
		}
		env = start(t, cfg, nil)
		got := getStats(t, env, url.Values{}).Totals
		if got.Requests != answered {
			t.Errorf("usage records %d, requests answered %d", got.Requests, answered)
		}
		var rows int64
		if err := env.App.DB.Table("usage_records").Count(&rows).Error; err == nil && rows != answered {
			t.Errorf("usage rows %d, want %d", rows, answered)
		}
	})
}
