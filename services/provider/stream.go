package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/services/llm"
)

// EventDecoder is what the format codecs' stream decoders provide:
// canonical events, io.EOF after EventEnd.
type EventDecoder interface {
	Next() (llm.Event, error)
}

// IdleTimeoutError says a stream was cancelled because no byte arrived for
// Idle. It unwraps to context.DeadlineExceeded and is a net.Error-style
// timeout, so callers classify it like any other upstream timeout.
type IdleTimeoutError struct{ Idle time.Duration }

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("upstream stream sent nothing for %s", e.Idle)
}
func (e *IdleTimeoutError) Unwrap() error { return context.DeadlineExceeded }
func (e *IdleTimeoutError) Timeout() bool { return true }

// errStreamClosed is the cancel cause when the caller closes a stream.
var errStreamClosed = errors.New("upstream stream closed by the gateway")

// idleBody resets a timer on every read that returns bytes; when it fires it
// cancels the request, which makes the blocked Read return. Resetting per
// read (not per event) means a slow but alive stream of tiny frames is never
// cut, and no goroutine is needed per stream.
type idleBody struct {
	body     io.ReadCloser
	idle     time.Duration
	timer    *time.Timer
	timedOut atomic.Bool
	stopped  atomic.Bool // Close ran: a racing Read must not re-arm the timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 && b.timer != nil && !b.timedOut.Load() && !b.stopped.Load() {
		b.timer.Reset(b.idle)
	}
	return n, err
}

// stream adapts a codec decoder over an HTTP body to llm.Stream.
type stream struct {
	name      string
	dec       EventDecoder
	body      *idleBody
	ctx       context.Context
	cancel    context.CancelCauseFunc
	err       error       // sticky: once Next failed or ended it keeps saying so
	ended     atomic.Bool // the decoder reached a clean io.EOF (read by a concurrent Close)
	closeOnce sync.Once
}

// NewStream wraps a 2xx event-stream response. newDecoder builds the codec's
// decoder over the (idle-watched) body. Close closes the body and cancels
// ctx through cancel; idle 0 disables the idle timeout.
func NewStream(ctx context.Context, name string, resp *http.Response, cancel context.CancelCauseFunc, idle time.Duration,
	newDecoder func(io.Reader) EventDecoder) llm.Stream {
	b := &idleBody{body: resp.Body, idle: idle}
	if idle > 0 {
		b.timer = time.AfterFunc(idle, func() {
			b.timedOut.Store(true)
			cancel(&IdleTimeoutError{Idle: idle})
		})
	}
	return &stream{name: name, dec: newDecoder(b), body: b, ctx: ctx, cancel: cancel}
}

func (s *stream) Next() (llm.Event, error) {
	if s.err != nil {
		return llm.Event{}, s.err
	}
	ev, err := s.dec.Next()
	if err == nil {
		return ev, nil
	}
	switch {
	case err == io.EOF:
		s.ended.Store(true)
	case s.body.timedOut.Load():
		err = fmt.Errorf("%s: %w", s.name, &IdleTimeoutError{Idle: s.body.idle})
	case s.ctx.Err() != nil:
		// The decoder may have turned the read error into a generic one
		// (io.ErrUnexpectedEOF); the context says what really happened.
		if cause := context.Cause(s.ctx); !errors.Is(err, cause) {
			err = fmt.Errorf("%s upstream: %w (%w)", s.name, cause, err)
		}
	}
	s.err = err
	return llm.Event{}, err
}

// Close releases the stream. After a clean end it first reads what is left
// of the body (the chunked terminator, normally already buffered) so the
// connection goes back to the keep-alive pool instead of being torn down.
func (s *stream) Close() error {
	s.closeOnce.Do(func() {
		if s.body.timer != nil {
			s.body.stopped.Store(true)
			s.body.timer.Stop()
		}
		if s.ended.Load() {
			// Bounded so a server that sends [DONE] and then stalls
			// cannot hold Close.
			t := time.AfterFunc(100*time.Millisecond, func() { s.cancel(errStreamClosed) })
			_, _ = io.CopyN(io.Discard, s.body.body, 64<<10)
			t.Stop()
		}
		s.cancel(errStreamClosed)
		_ = s.body.body.Close()
	})
	return nil
}
