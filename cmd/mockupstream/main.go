// Command mockupstream serves the scripted fake LLM upstream (package
// mockupstream) on a TCP address, for manual runs and as the benchmark
// upstream. One server speaks OpenAI (/v1/chat/completions), Azure
// (/openai/deployments/{d}/chat/completions) and Anthropic (/v1/messages).
// Flags set the global mode; per-request directives in the model name or the
// X-Mock-Directives header still apply.
//
//	mockupstream --addr :9000 --latency 20ms --chunks 50 --chunk-delay 5ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmgw/gateway/mockupstream"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mockupstream:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mockupstream", flag.ContinueOnError)
	var (
		addr       = fs.String("addr", ":9000", "listen address")
		latency    = fs.Duration("latency", 0, "fixed delay before the response headers")
		chunks     = fs.Int("chunks", 0, "reply length in words = stream chunks (0: \"Hello from <model>\")")
		chunkDelay = fs.Duration("chunk-delay", 0, "delay between streamed chunks")
		failStatus = fs.Int("fail-status", 0, "answer every request with this HTTP status")
		failTimes  = fs.Int("fail-times", 0, "with --fail-status: fail only the first N requests")
		fault      = fs.String("fault", "", "malformed | break-stream | hang | reset | error-event")
		tools      = fs.Bool("tools", false, "reply with two tool calls")
		echo       = fs.Bool("echo", false, "reply with the last user message")
		apiKey     = fs.String("api-key", "", "accept only this credential (default: any non-empty)")
		record     = fs.Bool("record", false, "keep every request in memory (grows without bound)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch f := mockupstream.Fault(*fault); f {
	case mockupstream.FaultNone, mockupstream.FaultMalformed, mockupstream.FaultBreakStream,
		mockupstream.FaultHang, mockupstream.FaultReset, mockupstream.FaultErrorEvent:
	default:
		return fmt.Errorf("unknown --fault %q", f)
	}

	m := mockupstream.NewUnstarted()
	m.SetRecording(*record)
	m.SetMode(mockupstream.Mode{
		FailStatus: *failStatus, FailTimes: *failTimes, Latency: *latency,
		Fault: mockupstream.Fault(*fault), Tools: *tools, Echo: *echo,
		Chunks: *chunks, ChunkDelay: *chunkDelay, APIKey: *apiKey,
	})
	srv := &http.Server{
		Addr:              *addr,
		Handler:           m.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// No write timeout: slow streams are the point.
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 1 << 20,
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("mockupstream listening on %s", *addr)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	m.Close() // release hanging handlers so Shutdown can finish
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
