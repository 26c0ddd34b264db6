// Command gateway is the LLM gateway: one process serving the model
// endpoints, the admin API, the item service, /health and /metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/llmgw/gateway/app"
	"github.com/llmgw/gateway/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// run starts the server and blocks until ctx ends (a signal), then drains:
// stop accepting, let in-flight requests (streams included) finish within
// server.shutdown_grace, then close the app (flushing usage records).
func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	cfgPath := fs.String("config", "config.yaml", "path to the YAML config file (\"\" = defaults and GATEWAY_* env only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.Log)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}

	a, err := app.New(cfg, log)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Addr:              cfg.Server.Addr(),
		Handler:           a.Handler,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		_ = a.Close(context.Background())
		return err
	}
	log.Info("listening", zap.String("addr", ln.Addr().String()),
		zap.String("database", cfg.Database.Driver), zap.Bool("items", cfg.Items.Enabled))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		_ = a.Close(context.Background())
		return err
	case <-ctx.Done():
	}

	log.Info("shutting down", zap.Duration("grace", cfg.Server.ShutdownGrace))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("grace period over with requests still running; closing them", zap.Error(err))
		_ = srv.Close()
	}
	// The app gets its own short budget: pending usage must be flushed even
	// when the grace period was used up by slow streams.
	closeCtx, cancelClose := context.WithTimeout(context.Background(), closeTimeout(cfg))
	defer cancelClose()
	if err := a.Close(closeCtx); err != nil {
		log.Error("closing resources", zap.Error(err))
		return err
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

func closeTimeout(cfg *config.Config) (d time.Duration) {
	d = cfg.Server.ShutdownGrace
	if d < 10*time.Second {
		d = 10 * time.Second
	}
	return d
}

// newLogger builds the zap logger: JSON in release, console in debug, per log.format.
func newLogger(c config.LogConfig) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return nil, fmt.Errorf("config: log.level: %w", err)
	}
	var zc zap.Config
	if c.Format == "console" {
		zc = zap.NewDevelopmentConfig()
	} else {
		zc = zap.NewProductionConfig()
		zc.EncoderConfig.TimeKey = "time"
		zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
		zc.Sampling = nil // access logs must not be sampled away
	}
	zc.Level = zap.NewAtomicLevelAt(level)
	return zc.Build()
}
