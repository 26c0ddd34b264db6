package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// runHold opens cfg.Hold streaming requests at once, waits until every one has
// delivered its first SSE data frame, then keeps them all open for cfg.HoldFor
// while reading slowly, sampling the RSS of cfg.PID. The price of one held
// stream is (RSS held - RSS before) / streams.
func runHold(cfg *Config, stderr io.Writer) (*Result, error) {
	// Bounded: opening may take cfg.Timeout, holding cfg.HoldFor, then 5 s to drain.
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout+cfg.HoldFor+5*time.Second)
	defer cancel()
	rq, err := newRequester(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tr := newTransport(cfg.Hold)
	defer tr.CloseIdleConnections()

	res := &Result{Name: cfg.Name, Mode: "hold", Hold: cfg.Hold, Conns: cfg.Hold, DurationS: cfg.HoldFor.Seconds()}
	if cfg.PID > 0 {
		res.RSSBeforeKiB, _ = readRSSKiB(cfg.PID)
	}

	var (
		opened, active, errs, non2xx atomic.Int64
		firstErr                     atomic.Value
		openWG, allWG                sync.WaitGroup
		release                      = make(chan struct{})
	)
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	start := time.Now()
	openWG.Add(cfg.Hold)
	for range cfg.Hold {
		allWG.Go(func() {
			signalled := false
			signal := func() {
				if !signalled {
					signalled = true
					openWG.Done()
				}
			}
			defer signal()
			resp, err := tr.RoundTrip(rq.new())
			if err != nil {
				fail(err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode < 200 || resp.StatusCode > 299 {
				non2xx.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d", resp.StatusCode))
				return
			}
			var m dataMatcher
			buf := make([]byte, 512)
			for {
				n, err := resp.Body.Read(buf)
				if m.feed(buf[:n]) {
					break
				}
				if err != nil {
					fail(fmt.Errorf("stream ended before its first data frame: %w", err))
					return
				}
			}
			opened.Add(1)
			active.Add(1)
			defer active.Add(-1)
			signal()
			// Hold: read a little, pause, repeat, until released. A stream that
			// ends on its own while held is reported through held_at_end.
			t := time.NewTimer(cfg.SlowRead)
			defer t.Stop()
			for {
				select {
				case <-release:
					return
				case <-t.C:
				}
				if _, err := resp.Body.Read(buf); err != nil {
					return
				}
				t.Reset(cfg.SlowRead)
			}
		})
	}

	openDone := make(chan struct{})
	go func() { openWG.Wait(); close(openDone) }()
	select {
	case <-openDone:
	case <-time.After(cfg.Timeout):
		fmt.Fprintf(stderr, "loadgen: hold: only %d of %d streams open after %s\n", opened.Load(), cfg.Hold, cfg.Timeout)
	}
	res.OpenS = time.Since(start).Seconds()
	res.Opened = opened.Load()
	fmt.Fprintf(stderr, "loadgen: hold: %d/%d streams open after %.2fs; holding %s\n", res.Opened, cfg.Hold, res.OpenS, cfg.HoldFor)

	// Sample RSS while held; the figure used is the last sample (steady state),
	// the peak is reported beside it.
	deadline := time.Now().Add(cfg.HoldFor)
	for {
		if cfg.PID > 0 {
			if kib, err := readRSSKiB(cfg.PID); err == nil {
				res.RSSHeldKiB = kib
				res.RSSPeakKiB = max(res.RSSPeakKiB, kib)
			}
		}
		d := time.Until(deadline)
		if d <= 0 {
			break
		}
		time.Sleep(min(d, 250*time.Millisecond))
	}
	res.HeldAtEnd = active.Load()
	close(release)
	cancel()
	allWG.Wait()

	res.Requests = res.Opened
	res.Errors = errs.Load()
	res.Non2xx = non2xx.Load()
	if v, ok := firstErr.Load().(string); ok {
		res.FirstError = v
	}
	if res.HeldAtEnd > 0 && cfg.PID > 0 {
		res.KiBPerStream = float64(res.RSSHeldKiB-res.RSSBeforeKiB) / float64(res.HeldAtEnd)
	}
	return res, nil
}
