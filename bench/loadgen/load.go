package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// Result is what one run reports. The first fields are the stable JSON shape
// run.sh and the report rely on; the rest are filled when they apply.
type Result struct {
	Name      string  `json:"name,omitempty"`
	Mode      string  `json:"mode"`
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	Non2xx    int64   `json:"non2xx"`
	RPS       float64 `json:"rps"`
	P50ms     float64 `json:"p50_ms"`
	P90ms     float64 `json:"p90_ms"`
	P99ms     float64 `json:"p99_ms"`
	Maxms     float64 `json:"max_ms"`
	TTFBP50ms float64 `json:"ttfb_p50_ms"`
	TTFBP99ms float64 `json:"ttfb_p99_ms"`

	DurationS  float64 `json:"duration_s"`
	Conns      int     `json:"conns"`
	TargetRate float64 `json:"target_rate,omitempty"`
	// Service time (from the actual send, not the schedule), open loop only.
	SvcP50ms float64 `json:"svc_p50_ms,omitempty"`
	SvcP99ms float64 `json:"svc_p99_ms,omitempty"`
	// -pid: CPU (user+system) of that process over the measured window.
	CPUms        float64 `json:"cpu_ms,omitempty"`
	CPUusPerReq  float64 `json:"cpu_us_per_req,omitempty"`
	RSSKiB       int64   `json:"rss_kib,omitempty"`
	RSSAnonKiB   int64   `json:"rss_anon_kib,omitempty"`
	RSSFileKiB   int64   `json:"rss_file_kib,omitempty"`
	FirstError   string  `json:"first_error,omitempty"`
	FirstNon2xx  int     `json:"first_non2xx_status,omitempty"`
	Hold         int     `json:"hold,omitempty"`
	Opened       int64   `json:"opened,omitempty"`
	HeldAtEnd    int64   `json:"held_at_end,omitempty"`
	OpenS        float64 `json:"open_s,omitempty"`
	RSSBeforeKiB int64   `json:"rss_before_kib,omitempty"`
	RSSHeldKiB   int64   `json:"rss_held_kib,omitempty"`
	RSSPeakKiB   int64   `json:"rss_peak_kib,omitempty"`
	KiBPerStream float64 `json:"kib_per_stream,omitempty"`
}

// writeSummary is the one progress line printed beside -json output.
func (r *Result) writeSummary(w io.Writer) {
	name := r.Name
	if name == "" {
		name = r.Mode
	}
	switch {
	case r.Hold > 0:
		fmt.Fprintf(w, "  %-14s %d/%d held, %.1f KiB/stream (RSS %.1f -> %.1f MiB), %d errors, %d non-2xx\n",
			name, r.HeldAtEnd, r.Hold, r.KiBPerStream, float64(r.RSSBeforeKiB)/1024, float64(r.RSSHeldKiB)/1024, r.Errors, r.Non2xx)
	default:
		fmt.Fprintf(w, "  %-14s %8.0f req/s  p50 %.3f  p99 %.3f ms", name, r.RPS, r.P50ms, r.P99ms)
		if r.TTFBP50ms > 0 && r.TTFBP50ms != r.P50ms {
			fmt.Fprintf(w, "  first chunk p50 %.3f p99 %.3f ms", r.TTFBP50ms, r.TTFBP99ms)
		}
		if r.CPUusPerReq > 0 {
			fmt.Fprintf(w, "  %.0f us CPU/req", r.CPUusPerReq)
		}
		fmt.Fprintf(w, "  %d errors, %d non-2xx\n", r.Errors, r.Non2xx)
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "  %-14s first error: %s\n", "", r.FirstError)
	}
	if r.FirstNon2xx != 0 {
		fmt.Fprintf(w, "  %-14s first non-2xx status: %d\n", "", r.FirstNon2xx)
	}
}

func (r *Result) writeText(w io.Writer) {
	if r.Hold == 0 {
		fmt.Fprintf(w, "%s: %d requests in %.1fs = %.0f req/s, %d errors, %d non-2xx\n",
			r.Mode, r.Requests, r.DurationS, r.RPS, r.Errors, r.Non2xx)
	}
	if r.Requests > 0 && r.Hold == 0 {
		fmt.Fprintf(w, "latency ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", r.P50ms, r.P90ms, r.P99ms, r.Maxms)
	}
	if r.TTFBP50ms > 0 {
		fmt.Fprintf(w, "first chunk ms: p50 %.3f  p99 %.3f\n", r.TTFBP50ms, r.TTFBP99ms)
	}
	if r.SvcP50ms > 0 {
		fmt.Fprintf(w, "service time ms (from actual send): p50 %.3f  p99 %.3f\n", r.SvcP50ms, r.SvcP99ms)
	}
	if r.CPUms > 0 {
		fmt.Fprintf(w, "pid CPU: %.0f ms, %.1f us/request\n", r.CPUms, r.CPUusPerReq)
	}
	if r.Hold > 0 {
		fmt.Fprintf(w, "hold: %d/%d opened in %.2fs, %d still open at end, %d errors, %d non-2xx; RSS %d -> %d KiB (peak %d) = %.1f KiB/stream\n",
			r.Opened, r.Hold, r.OpenS, r.HeldAtEnd, r.Errors, r.Non2xx, r.RSSBeforeKiB, r.RSSHeldKiB, r.RSSPeakKiB, r.KiBPerStream)
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
	if r.FirstNon2xx != 0 {
		fmt.Fprintf(w, "first non-2xx status: %d\n", r.FirstNon2xx)
	}
}

// newTransport is the tuned client transport shared by loadgen and bareproxy's
// idea of "same tuning": keep-alive pool as large as the connection count, no
// compression, no HTTP/2, no proxy from the environment.
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 0,
		WriteBufferSize:       4 << 10,
		ReadBufferSize:        16 << 10,
	}
}

// requester builds requests from one template: a shallow copy of a prepared
// *http.Request plus a fresh body reader is two small allocations per request.
type requester struct {
	tmpl http.Request
	body []byte
}

func newRequester(ctx context.Context, cfg *Config) (*requester, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("-url: scheme must be http or https, got %q", u.Scheme)
	}
	h := make(http.Header, len(cfg.Headers)+1)
	for _, kv := range cfg.Headers {
		h.Add(kv[0], kv[1])
	}
	if cfg.Body != nil && h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	r := &requester{body: cfg.Body}
	r.tmpl = http.Request{
		Method:     cfg.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       u.Host,
	}
	if v := h.Get("Host"); v != "" {
		r.tmpl.Host = v
	}
	// The context is the same for every request of a run, so it lives in the
	// template and each copy carries it without a WithContext allocation.
	r.tmpl = *r.tmpl.WithContext(ctx)
	return r, nil
}

func (r *requester) new() *http.Request {
	req := new(http.Request)
	*req = r.tmpl
	if r.body != nil {
		b := r.body
		req.ContentLength = int64(len(b))
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	return req
}

// dataMatcher finds "data:" across read boundaries. The pattern has no proper
// prefix that is also a suffix, so a mismatch only needs to re-test for 'd'.
type dataMatcher struct{ i int }

const dataPrefix = "data:"

func (m *dataMatcher) feed(p []byte) bool {
	for _, c := range p {
		switch {
		case c == dataPrefix[m.i]:
			m.i++
			if m.i == len(dataPrefix) {
				return true
			}
		case c == 'd':
			m.i = 1
		default:
			m.i = 0
		}
	}
	return false
}

// worker holds one connection's recordings; merged once at the end.
type worker struct {
	lat    []int64 // ns, from scheduled (open loop) or actual (closed loop) send
	svc    []int64 // ns, from actual send (open loop only)
	ttfb   []int64 // ns, to first body byte or first SSE data: frame
	reqs   int64
	errs   int64
	non2xx int64
	firstE string
	first  int
	buf    []byte
}

// do sends one request. sched is the time latency counts from in the open
// loop (zero in the closed loop: latency counts from the send); record says
// whether the request falls in the measured window.
func (w *worker) do(tr http.RoundTripper, rq *requester, stream bool, sched time.Time, record bool) {
	sent := time.Now()
	t0 := sent
	if !sched.IsZero() {
		t0 = sched
	}
	resp, err := tr.RoundTrip(rq.new())
	if err != nil {
		if record {
			w.errs++
			if w.firstE == "" {
				w.firstE = err.Error()
			}
		}
		return
	}
	var (
		m     dataMatcher
		ttfb  int64 = -1
		rdErr error
	)
	for {
		n, err := resp.Body.Read(w.buf)
		if n > 0 && ttfb < 0 && (!stream || m.feed(w.buf[:n])) {
			ttfb = int64(time.Since(t0))
		}
		if err != nil {
			if err != io.EOF {
				rdErr = err
			}
			break
		}
	}
	resp.Body.Close()
	end := time.Now()
	if !record {
		return
	}
	if rdErr != nil {
		w.errs++
		if w.firstE == "" {
			w.firstE = "reading body: " + rdErr.Error()
		}
		return
	}
	w.reqs++
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		w.non2xx++
		if w.first == 0 {
			w.first = resp.StatusCode
		}
	}
	w.lat = append(w.lat, int64(end.Sub(t0)))
	if !sched.IsZero() {
		w.svc = append(w.svc, int64(end.Sub(sent)))
	}
	if ttfb >= 0 {
		w.ttfb = append(w.ttfb, ttfb)
	}
}

func runLoad(cfg *Config) (*Result, error) {
	start := time.Now()
	mStart := start.Add(cfg.Warmup)
	mEnd := mStart.Add(cfg.Duration)
	// Every loop is bounded: in-flight requests get at most min(timeout, 10s)
	// after the window to finish, then the context cancels them.
	grace := min(cfg.Timeout, 10*time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), mEnd.Add(grace))
	defer cancel()
	rq, err := newRequester(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tr := newTransport(cfg.Conns)
	tr.ResponseHeaderTimeout = cfg.Timeout
	defer tr.CloseIdleConnections()

	expect := int(cfg.Duration.Seconds()*max(cfg.Rate, 1000)/float64(cfg.Conns)) + 64
	workers := make([]*worker, cfg.Conns)
	for i := range workers {
		workers[i] = &worker{buf: make([]byte, 16<<10), lat: make([]int64, 0, expect)}
	}

	cpu := startCPUWindow(cfg.PID, cfg.ClkTck, mStart, mEnd)

	var wg sync.WaitGroup
	mode := "closed"
	if cfg.Rate > 0 {
		mode = "open"
		total := int(math.Ceil((cfg.Warmup + cfg.Duration).Seconds() * cfg.Rate))
		sched := make(chan send, total)
		for _, w := range workers {
			wg.Go(func() {
				for s := range sched {
					w.do(tr, rq, cfg.Stream, s.t0, !s.slot.Before(mStart) && s.slot.Before(mEnd))
				}
			})
		}
		interval := float64(time.Second) / cfg.Rate
	dispatch:
		for i := range total {
			t := start.Add(time.Duration(float64(i) * interval))
			if d := time.Until(t); d > 0 {
				time.Sleep(d)
			}
			// The runtime sleeps in whole milliseconds when idle (epoll
			// timeout), so a send leaves up to ~1 ms after its slot for
			// reasons of the generator's own. Forgive that much; anything
			// later (the machine was busy) and all waiting for a free
			// connection still count against the server.
			t0 := time.Now()
			if late := t.Add(timerSlack); t0.After(late) {
				t0 = late
			}
			select {
			case sched <- send{slot: t, t0: t0}:
			case <-ctx.Done():
				break dispatch
			}
		}
		close(sched)
	} else {
		for _, w := range workers {
			wg.Go(func() {
				for {
					now := time.Now()
					if !now.Before(mEnd) || ctx.Err() != nil {
						return
					}
					w.do(tr, rq, cfg.Stream, time.Time{}, !now.Before(mStart))
				}
			})
		}
	}
	wg.Wait()

	res := &Result{Name: cfg.Name, Mode: mode, DurationS: cfg.Duration.Seconds(), Conns: cfg.Conns, TargetRate: cfg.Rate}
	var lat, svc, ttfb []int64
	for _, w := range workers {
		res.Requests += w.reqs
		res.Errors += w.errs
		res.Non2xx += w.non2xx
		if res.FirstError == "" {
			res.FirstError = w.firstE
		}
		if res.FirstNon2xx == 0 {
			res.FirstNon2xx = w.first
		}
		lat = append(lat, w.lat...)
		svc = append(svc, w.svc...)
		ttfb = append(ttfb, w.ttfb...)
	}
	res.RPS = float64(res.Requests) / cfg.Duration.Seconds()
	slices.Sort(lat)
	slices.Sort(svc)
	slices.Sort(ttfb)
	res.P50ms, res.P90ms, res.P99ms = pct(lat, 0.50), pct(lat, 0.90), pct(lat, 0.99)
	res.Maxms = pct(lat, 1)
	res.SvcP50ms, res.SvcP99ms = pct(svc, 0.50), pct(svc, 0.99)
	res.TTFBP50ms, res.TTFBP99ms = pct(ttfb, 0.50), pct(ttfb, 0.99)
	if cfg.PID > 0 {
		if ms, ok := cpu.wait(); ok {
			res.CPUms = ms
			if res.Requests > 0 {
				res.CPUusPerReq = ms * 1000 / float64(res.Requests)
			}
		}
		res.RSSKiB, _ = readRSSKiB(cfg.PID)
	}
	return res, nil
}

// send is one open-loop slot: its exact scheduled time, and the time latency
// counts from (the slot, or up to timerSlack later).
type send struct{ slot, t0 time.Time }

// timerSlack is how late the open-loop dispatcher may wake without the delay
// being charged to the server; see the dispatch loop.
const timerSlack = time.Millisecond

// pct is the nearest-rank percentile of sorted nanoseconds, in milliseconds.
func pct(sorted []int64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / 1e6
}
