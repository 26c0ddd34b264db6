// Command bareproxy is benchmark baseline (b): the standard library's
// single-host reverse proxy with nothing added, tuned like the gateway's
// upstream client (large keep-alive pool, no compression, streams flushed at
// once). Whatever the gateway costs on top of this is the gateway's own cost.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("bareproxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	upstream := fs.String("upstream", "", "upstream base URL, e.g. http://127.0.0.1:9000 (required)")
	conns := fs.Int("maxidle", 2048, "MaxIdleConnsPerHost of the upstream transport")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-upstream %q: want an absolute http URL", *upstream)
	}
	srv, err := newServer(*addr, u, *conns)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Printf("bareproxy: %s -> %s", ln.Addr(), u)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// maxBody matches the gateway's default server.max_body_bytes.
const maxBody = 10 << 20

// bufferBody reads the whole request body before proxying. Without it, a
// streamed answer is sometimes cut: once the proxy writes the response headers
// the HTTP/1 server closes the unread inbound body, the outbound transport's
// final read of that body fails, and it tears down the upstream connection
// mid-stream (golang/go#40747). The gateway reads every body whole anyway, so
// this keeps the baseline honest rather than flattering it.
func bufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			n := r.ContentLength
			if n < 0 || n > maxBody {
				n = 512
			}
			buf := bytes.NewBuffer(make([]byte, 0, n))
			if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
				http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
			r.ContentLength = int64(buf.Len())
		}
		next.ServeHTTP(w, r)
	})
}

func newServer(addr string, upstream *url.URL, conns int) (*http.Server, error) {
	p := httputil.NewSingleHostReverseProxy(upstream)
	p.FlushInterval = -1
	p.Transport = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	p.ErrorLog = log.New(os.Stderr, "bareproxy: ", log.LstdFlags)
	return &http.Server{
		Addr:              addr,
		Handler:           bufferBody(p),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}, nil
}
