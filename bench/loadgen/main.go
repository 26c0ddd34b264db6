// Command loadgen is the gateway's HTTP load generator and benchmark helper.
//
// Without a subcommand it drives load against one URL in one of three modes:
//
//   - closed loop (-c N): N connections send back to back; measures max throughput;
//   - open loop (-rate R): sends are scheduled at exact 1/R intervals and latency
//     is measured from the scheduled send time, so a slow server cannot hide its
//     stalls by slowing the generator down (no coordinated omission);
//   - hold (-hold N): opens N streaming requests, keeps them open while reading
//     slowly, and samples the RSS of -pid to price one held stream.
//
// Subcommands used by bench/run.sh so that the script needs neither jq nor curl:
//
//	loadgen setup    creates the bench provider, alias and key through the admin API
//	loadgen wait     polls a URL until it answers 200
//	loadgen freeport prints free loopback TCP ports
//	loadgen rss      prints {"rss_kib": N} for a pid
//	loadgen report   renders the markdown result table from a directory of results
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "setup":
			return runSetup(args[1:], stdout)
		case "wait":
			return runWait(args[1:])
		case "freeport":
			return runFreeport(args[1:], stdout)
		case "rss":
			return runRSS(args[1:], stdout)
		case "report":
			return runReport(args[1:], stdout)
		default:
			return fmt.Errorf("unknown subcommand %q (want setup, wait, freeport, rss, report or flags)", args[0])
		}
	}
	cfg, err := parseLoadFlags(args, stderr)
	if err != nil {
		return err
	}
	var res *Result
	if cfg.Hold > 0 {
		res, err = runHold(cfg, stderr)
	} else {
		res, err = runLoad(cfg)
	}
	if err != nil {
		return err
	}
	if cfg.JSON {
		res.writeSummary(stderr)
		return json.NewEncoder(stdout).Encode(res)
	}
	res.writeText(stdout)
	return nil
}

// headerFlags collects repeatable -header 'K: V' flags.
type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

// Config is one load run's settings.
type Config struct {
	Name     string
	URL      string
	Method   string
	Body     []byte
	Headers  [][2]string
	Conns    int
	Rate     float64
	Duration time.Duration
	Warmup   time.Duration
	Timeout  time.Duration
	Stream   bool
	Hold     int
	HoldFor  time.Duration
	SlowRead time.Duration
	PID      int
	ClkTck   int
	JSON     bool
}

func parseLoadFlags(args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg     Config
		body    string
		headers headerFlags
	)
	fs.StringVar(&cfg.Name, "name", "", "label copied into the result")
	fs.StringVar(&cfg.URL, "url", "", "target URL (required)")
	fs.StringVar(&cfg.Method, "method", "", "HTTP method (default POST with a body, else GET)")
	fs.StringVar(&body, "body", "", "request body: a string, or @file to read it from a file")
	fs.Var(&headers, "header", "request header 'K: V' (repeatable)")
	fs.IntVar(&cfg.Conns, "c", 50, "connections (closed loop); workers/connections in -rate mode")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: requests per second at exact intervals (0 = closed loop)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured duration")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "unmeasured warm-up before the measured duration")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "per-request limit (hold: limit for opening the streams)")
	fs.BoolVar(&cfg.Stream, "stream", false, "streaming: time to first SSE 'data:' frame as well as total")
	fs.IntVar(&cfg.Hold, "hold", 0, "open N concurrent streaming requests and hold them open")
	fs.DurationVar(&cfg.HoldFor, "holdfor", 5*time.Second, "with -hold: how long to keep the streams once all are open")
	fs.DurationVar(&cfg.SlowRead, "slowread", 200*time.Millisecond, "with -hold: pause between reads of each held stream")
	fs.IntVar(&cfg.PID, "pid", 0, "process to measure: CPU time over the measured window, RSS (hold: RSS per stream)")
	fs.IntVar(&cfg.ClkTck, "clktck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	fs.BoolVar(&cfg.JSON, "json", false, "print the result as one JSON object")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if cfg.URL == "" {
		return nil, errors.New("-url is required")
	}
	if strings.HasPrefix(body, "@") {
		b, err := os.ReadFile(body[1:])
		if err != nil {
			return nil, fmt.Errorf("-body: %w", err)
		}
		cfg.Body = b
	} else if body != "" {
		cfg.Body = []byte(body)
	}
	if cfg.Method == "" {
		cfg.Method = "GET"
		if cfg.Body != nil {
			cfg.Method = "POST"
		}
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("-header %q: want 'Key: value'", h)
		}
		cfg.Headers = append(cfg.Headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	if cfg.Conns < 1 {
		return nil, errors.New("-c must be >= 1")
	}
	if cfg.Rate < 0 || cfg.Duration <= 0 || cfg.Warmup < 0 || cfg.Hold < 0 {
		return nil, errors.New("-rate, -duration, -warmup and -hold must not be negative (duration > 0)")
	}
	if cfg.ClkTck <= 0 {
		cfg.ClkTck = 100
	}
	if cfg.Hold > 0 {
		cfg.Stream = true
	}
	return &cfg, nil
}
