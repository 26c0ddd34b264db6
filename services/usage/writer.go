// Package usage writes usage records asynchronously, in batches, without ever
// dropping one silently.
//
// Producers (the request path) hand records to a bounded queue; one writer
// goroutine collects them into batches and writes each batch with a Sink. A
// failed batch is kept and retried with capped exponential backoff, so a
// database outage turns into back-pressure (the queue fills, producers block
// and are counted) instead of lost records. A retry after an ambiguous failure
// may write rows the database already has; the Sink deduplicates them by
// RequestID. Close stops intake, waits for producers already inside Enqueue,
// and flushes everything that was accepted.
package usage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/models"
)

// ErrClosed is returned by Enqueue after Close has begun.
var ErrClosed = errors.New("usage: writer closed")

// Sink stores batches of usage records. InsertBatch must be idempotent by
// RequestID (ON CONFLICT DO NOTHING) because a batch whose outcome was unknown
// is written again. It must not retain recs after returning: the writer reuses
// the slice.
type Sink interface {
	InsertBatch(ctx context.Context, recs []models.UsageRecord) error
}

// Options size the queue and the batches. Zero values take the defaults.
type Options struct {
	QueueSize     int           // records buffered before Enqueue blocks (default 10000)
	BatchSize     int           // records per InsertBatch (default 200)
	FlushInterval time.Duration // longest a record waits for its batch to fill (default 1s)
	// EnqueueWait is how long Enqueue may block on a full queue before the
	// wait is counted (Metrics.QueueFull) and logged. Enqueue keeps waiting
	// after that: the record is never dropped. <= 0 counts at once.
	EnqueueWait time.Duration
}

// Metrics observes the writer. Every method may be called concurrently.
type Metrics interface {
	QueueFull()
	Written(n int)
	WriteFailed(err error)
	QueueDepth(n int)
}

const (
	defaultQueueSize     = 10000
	defaultBatchSize     = 200
	defaultFlushInterval = time.Second
	minBackoff           = 100 * time.Millisecond
	maxBackoff           = 5 * time.Second
)

// Writer is the asynchronous batched usage writer. Create it with NewWriter,
// call Start once, and Close at shutdown.
type Writer struct {
	sink Sink
	o    Options
	m    Metrics
	logf func(msg string, err error)

	// queue holds pointers (from recordPool): a full-size buffer of records
	// would keep megabytes resident on an idle gateway.
	queue chan *models.UsageRecord

	// mu orders Enqueue against Close: an Enqueue that saw closed == false
	// has registered in inflight before Close can observe it, so Close can
	// wait for it and only then close the queue.
	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup

	pending atomic.Int64 // accepted but not yet written

	startOnce sync.Once
	closeOnce sync.Once
	// ctx is cancelled when Close gives up: the writer stops retrying and
	// blocked producers return.
	ctx      context.Context
	abort    context.CancelFunc
	done     chan struct{} // closed when the writer goroutine has exited
	closeErr error

	// backoff is the retry schedule; tests shorten it.
	minBackoff, maxBackoff time.Duration
}

// NewWriter returns a writer; m and logf may be nil.
func NewWriter(sink Sink, o Options, m Metrics, logf func(msg string, err error)) *Writer {
	if o.QueueSize <= 0 {
		o.QueueSize = defaultQueueSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = defaultBatchSize
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = defaultFlushInterval
	}
	if m == nil {
		m = nopMetrics{}
	}
	if logf == nil {
		logf = func(string, error) {}
	}
	ctx, abort := context.WithCancel(context.Background())
	return &Writer{
		ctx:        ctx,
		abort:      abort,
		sink:       sink,
		o:          o,
		m:          m,
		logf:       logf,
		queue:      make(chan *models.UsageRecord, o.QueueSize),
		done:       make(chan struct{}),
		minBackoff: minBackoff,
		maxBackoff: maxBackoff,
	}
}

// recordPool recycles the queue's records, so that enqueueing stays free of
// allocation on the request path.
var recordPool = sync.Pool{New: func() any { return new(models.UsageRecord) }}

// take copies a queued record out and recycles it.
func take(r *models.UsageRecord) models.UsageRecord {
	v := *r
	recordPool.Put(r)
	return v
}

// Start launches the writer goroutine. Calling it again is a no-op.
func (w *Writer) Start() {
	w.startOnce.Do(func() { go w.run() })
}

// Enqueue hands a record to the writer. It blocks while the queue is full
// (that is the back-pressure that keeps records from being dropped) and fails
// only with ErrClosed after Close, or with ctx's error if ctx ends first. The
// caller should pass a context that outlives the client's request, since a
// client hanging up must not lose its usage record.
func (w *Writer) Enqueue(ctx context.Context, r models.UsageRecord) error {
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return ErrClosed
	}
	w.inflight.Add(1)
	w.mu.RUnlock()
	defer w.inflight.Done()

	// Counted before the send so the writer can never decrement first.
	w.pending.Add(1)
	rec := recordPool.Get().(*models.UsageRecord)
	*rec = r
	select {
	case w.queue <- rec:
		return nil
	default:
	}
	if w.o.EnqueueWait > 0 {
		t := time.NewTimer(w.o.EnqueueWait)
		select {
		case w.queue <- rec:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			w.pending.Add(-1)
			return ctx.Err()
		case <-w.ctx.Done():
			t.Stop()
			w.pending.Add(-1)
			return ErrClosed
		case <-t.C:
		}
	}
	w.m.QueueFull()
	w.logf("usage queue full; request waiting for the writer", nil)
	select {
	case w.queue <- rec:
		return nil
	case <-ctx.Done():
		w.pending.Add(-1)
		return ctx.Err()
	case <-w.ctx.Done():
		w.pending.Add(-1)
		return ErrClosed
	}
}

// Depth is the number of records accepted but not yet written (queued or in
// the batch being written).
func (w *Writer) Depth() int { return int(w.pending.Load()) }

// Close stops accepting records, waits for Enqueue calls already in progress,
// and writes everything accepted. It returns an error only if ctx ends first,
// saying how many records were left unwritten; the writer then stops
// retrying. Close starts the writer if Start was never called, so nothing
// accepted is stranded. Further calls return the first call's result.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.Start()
		drained := make(chan struct{})
		go func() {
			// Producers blocked on a full queue finish as the writer
			// drains it; only then is closing the channel safe.
			w.inflight.Wait()
			close(w.queue)
			close(drained)
		}()
		select {
		case <-w.done:
			w.abort() // releases the context; nothing is left to stop
		case <-ctx.Done():
			w.abort()
			<-w.done
			<-drained // blocked producers return ErrClosed once aborted
			if n := w.pending.Load(); n > 0 {
				w.closeErr = fmt.Errorf("usage: %d records unwritten at shutdown: %w", n, ctx.Err())
				w.logf("usage records unwritten at shutdown", w.closeErr)
			}
		}
	})
	return w.closeErr
}

func (w *Writer) run() {
	defer close(w.done)
	batch := make([]models.UsageRecord, 0, w.o.BatchSize)
	timer := time.NewTimer(w.o.FlushInterval)
	timer.Stop()
	for {
		r, ok := <-w.queue
		if !ok {
			return
		}
		batch = append(batch[:0], take(r))
		open := w.fill(&batch, timer)
		if !w.write(batch) {
			// Aborted by Close: the records stay counted in pending.
			return
		}
		if !open {
			// Queue closed and drained into the last batches.
			for {
				batch = batch[:0]
				for len(batch) < w.o.BatchSize {
					r, ok := <-w.queue
					if !ok {
						break
					}
					batch = append(batch, take(r))
				}
				if len(batch) == 0 {
					return
				}
				if !w.write(batch) {
					return
				}
			}
		}
	}
}

// fill adds records to batch until it is full or FlushInterval has passed
// since its first record. It reports false once the queue is closed.
func (w *Writer) fill(batch *[]models.UsageRecord, timer *time.Timer) bool {
	// Take what is already queued without touching the timer: under load
	// batches fill here.
	for len(*batch) < w.o.BatchSize {
		select {
		case r, ok := <-w.queue:
			if !ok {
				return false
			}
			*batch = append(*batch, take(r))
			continue
		default:
		}
		break
	}
	if len(*batch) >= w.o.BatchSize {
		return true
	}
	timer.Reset(w.o.FlushInterval)
	defer timer.Stop()
	for len(*batch) < w.o.BatchSize {
		select {
		case r, ok := <-w.queue:
			if !ok {
				return false
			}
			*batch = append(*batch, take(r))
		case <-timer.C:
			return true
		case <-w.ctx.Done():
			return true
		}
	}
	return true
}

// write writes batch, retrying until it succeeds; false means Close gave up.
func (w *Writer) write(batch []models.UsageRecord) bool {
	backoff := w.minBackoff
	for {
		err := w.sink.InsertBatch(w.ctx, batch)
		if err == nil {
			n := len(batch)
			w.pending.Add(-int64(n))
			w.m.Written(n)
			w.m.QueueDepth(len(w.queue))
			return true
		}
		w.m.WriteFailed(err)
		w.logf(fmt.Sprintf("usage batch of %d failed; retrying in %s", len(batch), backoff), err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return false
		}
		backoff *= 2
		if backoff > w.maxBackoff {
			backoff = w.maxBackoff
		}
	}
}

type nopMetrics struct{}

func (nopMetrics) QueueFull()        {}
func (nopMetrics) Written(int)       {}
func (nopMetrics) WriteFailed(error) {}
func (nopMetrics) QueueDepth(int)    {}
