package usage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/gateway/models"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSink behaves like the Postgres sink: rows are unique by RequestID and a
// duplicate insert is ignored (ON CONFLICT DO NOTHING).
type fakeSink struct {
	mu      sync.Mutex
	rows    map[string]int // request id → times accepted (must end at 1)
	dupes   int            // inserts ignored as duplicates
	batches []int
	calls   int
	delay   time.Duration
	// fail decides the outcome of call n (1-based): nil = succeed; an error
	// with written=true is an ambiguous failure (rows stored, ack lost).
	fail func(n int) (err error, written bool)
	gate chan struct{} // when non-nil, each call waits for a receive
}

func newSink() *fakeSink { return &fakeSink{rows: map[string]int{}} }

func (s *fakeSink) InsertBatch(ctx context.Context, recs []models.UsageRecord) error {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	var err error
	written := true
	if s.fail != nil {
		if e, w := s.fail(s.calls); e != nil {
			err, written = e, w
		}
	}
	if written {
		for _, r := range recs {
			if s.rows[r.RequestID] > 0 {
				s.dupes++
				continue
			}
			s.rows[r.RequestID]++
		}
		if err == nil {
			s.batches = append(s.batches, len(recs))
		}
	}
	return err
}

func (s *fakeSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rows)
}

type countingMetrics struct {
	full, written, failed atomic.Int64
	depth                 atomic.Int64
}

func (m *countingMetrics) QueueFull()        { m.full.Add(1) }
func (m *countingMetrics) Written(n int)     { m.written.Add(int64(n)) }
func (m *countingMetrics) WriteFailed(error) { m.failed.Add(1) }
func (m *countingMetrics) QueueDepth(n int)  { m.depth.Store(int64(n)) }
func rec(i int) models.UsageRecord           { return models.UsageRecord{RequestID: fmt.Sprintf("req-%d", i)} }
func fastRetry(w *Writer) *Writer {
	w.minBackoff, w.maxBackoff = time.Millisecond, 5*time.Millisecond
	return w
}
func closeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestBatches(t *testing.T) {
	tests := []struct {
		name      string
		n, batch  int
		wantMaxSz int
	}{
		{"fewer than a batch", 3, 10, 3},
		{"several batches", 95, 10, 10},
		{"exact multiple", 40, 20, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSink()
			m := &countingMetrics{}
			w := NewWriter(s, Options{QueueSize: 1000, BatchSize: tt.batch, FlushInterval: 20 * time.Millisecond}, m, nil)
			w.Start()
			for i := range tt.n {
				if err := w.Enqueue(context.Background(), rec(i)); err != nil {
					t.Fatal(err)
				}
			}
			// Written by the flush interval, without Close.
			deadline := time.Now().Add(5 * time.Second)
			for s.count() < tt.n && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := s.count(); got != tt.n {
				t.Fatalf("written %d before Close, want %d", got, tt.n)
			}
			if err := w.Close(closeCtx(t)); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, b := range s.batches {
				if b > tt.wantMaxSz || b == 0 {
					t.Errorf("batch of %d, want 1..%d", b, tt.wantMaxSz)
				}
			}
			if m.written.Load() != int64(tt.n) || w.Depth() != 0 {
				t.Errorf("metrics written %d depth %d", m.written.Load(), w.Depth())
			}
		})
	}
}

func TestCloseFlushesEverythingFromManyProducers(t *testing.T) {
	s := newSink()
	s.delay = 2 * time.Millisecond // slow database: producers back up
	m := &countingMetrics{}
	w := NewWriter(s, Options{QueueSize: 500, BatchSize: 100, FlushInterval: 50 * time.Millisecond}, m, nil)
	w.Start()
	const producers, per = 50, 200
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range per {
				if err := w.Enqueue(context.Background(), rec(p*per+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rows) != producers*per || s.dupes != 0 {
		t.Fatalf("rows %d dupes %d, want %d and 0", len(s.rows), s.dupes, producers*per)
	}
	for id, n := range s.rows {
		if n != 1 {
			t.Fatalf("%s written %d times", id, n)
		}
	}
	if m.full.Load() == 0 {
		t.Error("a 500-slot queue with a slow sink should have been full at least once")
	}
	t.Logf("10000 records, %d batches, queue full %d times", len(s.batches), m.full.Load())
}

func TestSinkFailingThenRecoveringLosesNothing(t *testing.T) {
	s := newSink()
	errDB := errors.New("connection refused")
	s.fail = func(n int) (error, bool) {
		switch {
		case n == 3:
			return errors.New("ack lost"), true // ambiguous: rows stored
		case n <= 6:
			return errDB, false
		}
		return nil, false
	}
	m := &countingMetrics{}
	var logged atomic.Int64
	w := fastRetry(NewWriter(s, Options{QueueSize: 100, BatchSize: 7, FlushInterval: 5 * time.Millisecond}, m,
		func(string, error) { logged.Add(1) }))
	w.Start()
	const n = 300
	for i := range n {
		if err := w.Enqueue(context.Background(), rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := s.count(); got != n {
		t.Fatalf("rows %d, want %d", got, n)
	}
	if m.failed.Load() != 6 || logged.Load() < 6 {
		t.Errorf("failures counted %d logged %d, want 6", m.failed.Load(), logged.Load())
	}
	if s.dupes == 0 {
		t.Error("the batch retried after the ambiguous failure should have hit ON CONFLICT")
	}
}

func TestQueueFullBlocksAndCounts(t *testing.T) {
	tests := []struct {
		name string
		wait time.Duration
	}{
		{"counted at once", 0},
		{"counted after EnqueueWait", 30 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSink()
			s.gate = make(chan struct{})
			m := &countingMetrics{}
			w := NewWriter(s, Options{QueueSize: 2, BatchSize: 1, FlushInterval: time.Millisecond, EnqueueWait: tt.wait}, m, nil)
			w.Start()
			// One record held by the blocked sink, two in the queue.
			for i := range 3 {
				if err := w.Enqueue(context.Background(), rec(i)); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					waitFor(t, func() bool { return len(w.queue) == 0 })
				}
			}
			returned := make(chan error, 1)
			go func() { returned <- w.Enqueue(context.Background(), rec(3)) }()
			select {
			case err := <-returned:
				t.Fatalf("Enqueue on a full queue returned %v instead of blocking", err)
			case <-time.After(tt.wait + 50*time.Millisecond):
			}
			if got := m.full.Load(); got != 1 {
				t.Fatalf("QueueFull counted %d, want 1", got)
			}
			if w.Depth() != 4 {
				t.Errorf("Depth %d, want 4", w.Depth())
			}
			close(s.gate) // the database answers again
			if err := <-returned; err != nil {
				t.Fatal(err)
			}
			if err := w.Close(closeCtx(t)); err != nil {
				t.Fatal(err)
			}
			if s.count() != 4 || m.full.Load() != 1 {
				t.Fatalf("rows %d full %d", s.count(), m.full.Load())
			}
		})
	}
}

func TestEnqueueContextEndsWhileFull(t *testing.T) {
	s := newSink()
	s.gate = make(chan struct{})
	w := NewWriter(s, Options{QueueSize: 1, BatchSize: 1}, nil, nil)
	w.Start()
	_ = w.Enqueue(context.Background(), rec(0))
	waitFor(t, func() bool { return len(w.queue) == 0 })
	_ = w.Enqueue(context.Background(), rec(1))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Enqueue(ctx, rec(2)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline exceeded", err)
	}
	if w.Depth() != 2 {
		t.Fatalf("Depth %d, want 2", w.Depth())
	}
	close(s.gate)
	if err := w.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	if s.count() != 2 {
		t.Fatalf("rows %d, want 2", s.count())
	}
}

func TestEnqueueAfterClose(t *testing.T) {
	w := NewWriter(newSink(), Options{}, nil, nil)
	w.Start()
	if err := w.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := w.Enqueue(context.Background(), rec(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v, want ErrClosed", err)
	}
	if err := w.Close(closeCtx(t)); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestCloseWaitsForBlockedEnqueue(t *testing.T) {
	s := newSink()
	s.gate = make(chan struct{})
	w := NewWriter(s, Options{QueueSize: 1, BatchSize: 1, FlushInterval: time.Millisecond}, nil, nil)
	w.Start()
	_ = w.Enqueue(context.Background(), rec(0))
	waitFor(t, func() bool { return len(w.queue) == 0 })
	_ = w.Enqueue(context.Background(), rec(1))
	blocked := make(chan error, 1)
	go func() { blocked <- w.Enqueue(context.Background(), rec(2)) }()
	time.Sleep(20 * time.Millisecond) // let it block on the full queue
	closed := make(chan error, 1)
	go func() { closed <- w.Close(closeCtx(t)) }()
	time.Sleep(20 * time.Millisecond)
	close(s.gate)
	if err := <-blocked; err != nil {
		t.Fatal("the Enqueue already in progress at Close must be accepted:", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if s.count() != 3 {
		t.Fatalf("rows %d, want 3", s.count())
	}
}

func TestCloseStartsAnUnstartedWriter(t *testing.T) {
	s := newSink()
	w := NewWriter(s, Options{}, nil, nil)
	for i := range 5 {
		_ = w.Enqueue(context.Background(), rec(i))
	}
	if err := w.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	if s.count() != 5 {
		t.Fatalf("rows %d, want 5", s.count())
	}
}

func TestCloseTimeoutReportsUnwritten(t *testing.T) {
	s := newSink()
	s.fail = func(int) (error, bool) { return errors.New("db down"), false }
	var logs atomic.Int64
	w := fastRetry(NewWriter(s, Options{QueueSize: 1, BatchSize: 1, FlushInterval: time.Millisecond}, nil,
		func(string, error) { logs.Add(1) }))
	w.Start()
	_ = w.Enqueue(context.Background(), rec(0)) // taken by the writer, failing forever
	waitFor(t, func() bool { return len(w.queue) == 0 })
	_ = w.Enqueue(context.Background(), rec(1)) // fills the queue
	// A producer blocked on the full queue is released with ErrClosed.
	blocked := make(chan error, 1)
	go func() { blocked <- w.Enqueue(context.Background(), rec(2)) }()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := w.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "2 records unwritten") {
		t.Fatalf("err %v, want 2 records unwritten", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v should wrap the deadline", err)
	}
	if e := <-blocked; !errors.Is(e, ErrClosed) {
		t.Errorf("blocked producer got %v, want ErrClosed", e)
	}
	if logs.Load() == 0 {
		t.Error("failures should be logged")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkEnqueue(b *testing.B) {
	w := NewWriter(discardSink{}, Options{QueueSize: 10000, BatchSize: 500, FlushInterval: 10 * time.Millisecond}, nil, nil)
	w.Start()
	r := rec(1)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = w.Enqueue(ctx, r)
		}
	})
	b.StopTimer()
	_ = w.Close(context.Background())
}

type discardSink struct{}

func (discardSink) InsertBatch(context.Context, []models.UsageRecord) error { return nil }
