package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Targets from the issue, as ratios or differences against the same run.
const (
	minThroughputVsBare = 0.5  // gateway max rps >= 50% of the bare proxy's
	maxCPUVsBare        = 2.0  // gateway CPU per request <= 2x the bare proxy's
	maxAddedP50ms       = 0.5  // p50 at 500 rps minus direct p50
	maxAddedP99ms       = 2.0  // p99 at 500 rps minus direct p99
	maxAddedTTFBP50ms   = 1.0  // stream first chunk p50 minus direct
	maxKiBPerStream     = 32.0 // RSS per held stream
	maxIdleRSSMiB       = 50.0 // idle RSS
)

// target is one column of the report: a name in the result files and a label.
type target struct{ key, label string }

var (
	direct   = target{"direct", "(a) direct to mock"}
	bare     = target{"bare", "(b) bare httputil proxy"}
	gateways = []target{{"sqlite", "(c1) gateway, SQLite"}, {"pg", "(c2) gateway, PostgreSQL"}}
)

type results struct {
	dir string
}

// get loads DIR/<target>-<kind>.json; nil when the run was skipped or failed.
func (r results) get(t target, kind string) *Result {
	b, err := os.ReadFile(filepath.Join(r.dir, t.key+"-"+kind+".json"))
	if err != nil {
		return nil
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil
	}
	return &res
}

func (r results) note(t target) string {
	b, err := os.ReadFile(filepath.Join(r.dir, t.key+"-skipped.txt"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func runReport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory of result JSON files (required)")
	out := fs.String("out", "", "also write the markdown here")
	command := fs.String("cmd", "make bench", "command line recorded in the report")
	goVersion := fs.String("go", runtime.Version(), "Go version recorded in the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("report: -dir is required")
	}
	var buf bytes.Buffer
	writeReport(&buf, results{*dir}, *command, *goVersion)
	if *out != "" {
		if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	_, err := stdout.Write(buf.Bytes())
	return err
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func f(v float64, digits int) string { return fmt.Sprintf("%.*f", digits, v) }

func writeReport(w io.Writer, r results, command, goVersion string) {
	fmt.Fprintf(w, "## Benchmark run %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %d CPUs (%s), %s, %s/%s. Load generator, mock upstream and proxy share the CPUs.\n",
		runtime.NumCPU(), cpuModel(), goVersion, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "Command: `%s`\n\n", command)

	cols := append([]target{direct, bare}, gateways...)
	fmt.Fprint(w, "| measure |")
	for _, c := range cols {
		fmt.Fprintf(w, " %s |", c.label)
	}
	fmt.Fprint(w, "\n|---|")
	for range cols {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)

	row := func(name string, cell func(t target) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, c := range cols {
			if n := r.note(c); n != "" && c != direct && c != bare {
				fmt.Fprint(w, " skipped |")
				continue
			}
			s := cell(c)
			if s == "" {
				s = "n/a"
			}
			fmt.Fprintf(w, " %s |", s)
		}
		fmt.Fprintln(w)
	}
	ratio := func(kind string, val func(*Result) float64, t target, digits int) string {
		x := r.get(t, kind)
		if x == nil {
			return ""
		}
		s := f(val(x), digits)
		var parts []string
		for _, base := range []target{direct, bare} {
			if base == t || (t == direct) {
				continue
			}
			if b := r.get(base, kind); b != nil && val(b) > 0 {
				parts = append(parts, fmt.Sprintf("%.2f× %s", val(x)/val(b), base.key))
			}
		}
		if len(parts) > 0 {
			s += " (" + strings.Join(parts, ", ") + ")"
		}
		return s
	}
	added := func(kind string, val func(*Result) float64, t target) string {
		x := r.get(t, kind)
		if x == nil || val(x) == 0 {
			return ""
		}
		s := f(val(x), 3)
		var parts []string
		for _, base := range []target{direct, bare} {
			if base == t || t == direct {
				continue
			}
			if b := r.get(base, kind); b != nil && val(b) != 0 {
				parts = append(parts, fmt.Sprintf("%+.3f vs %s", val(x)-val(b), base.key))
			}
		}
		if len(parts) > 0 {
			s += " (" + strings.Join(parts, ", ") + ")"
		}
		return s
	}
	rps := func(x *Result) float64 { return x.RPS }
	p50 := func(x *Result) float64 { return x.P50ms }
	p99 := func(x *Result) float64 { return x.P99ms }
	t50 := func(x *Result) float64 { return x.TTFBP50ms }
	t99 := func(x *Result) float64 { return x.TTFBP99ms }

	row("max throughput, 50 conns (req/s)", func(t target) string { return ratio("max", rps, t, 0) })
	row("latency p50 at 500 rps (ms)", func(t target) string { return added("rate", p50, t) })
	row("latency p99 at 500 rps (ms)", func(t target) string { return added("rate", p99, t) })
	row("CPU per request at 500 rps (µs)", func(t target) string {
		x := r.get(t, "rate")
		if x == nil || x.CPUusPerReq == 0 {
			return ""
		}
		s := f(x.CPUusPerReq, 0)
		if t == direct {
			return s + " (mock itself)"
		}
		if b := r.get(bare, "rate"); t != bare && b != nil && b.CPUusPerReq > 0 {
			s += fmt.Sprintf(" (%.2f× bare)", x.CPUusPerReq/b.CPUusPerReq)
		}
		return s
	})
	row("stream first chunk p50 at 100 rps (ms)", func(t target) string { return added("stream", t50, t) })
	row("stream first chunk p99 at 100 rps (ms)", func(t target) string { return added("stream", t99, t) })
	row("idle RSS, VmRSS (MiB)", func(t target) string {
		if x := r.get(t, "idle"); x != nil && x.RSSKiB > 0 {
			s := f(float64(x.RSSKiB)/1024, 1)
			if x.RSSAnonKiB > 0 || x.RSSFileKiB > 0 {
				s += fmt.Sprintf(" (anon %.1f, file %.1f)", float64(x.RSSAnonKiB)/1024, float64(x.RSSFileKiB)/1024)
			}
			return s
		}
		return ""
	})
	row("RSS per held stream (KiB)", func(t target) string {
		x := r.get(t, "hold")
		if x == nil || x.RSSBeforeKiB == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f (%d held, %.1f→%.1f MiB)", x.KiBPerStream, x.HeldAtEnd,
			float64(x.RSSBeforeKiB)/1024, float64(x.RSSHeldKiB)/1024)
	})
	row("1-min load average as the target's runs began", func(t target) string {
		b, err := os.ReadFile(filepath.Join(r.dir, t.key+"-loadavg.txt"))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	})
	row("errors / non-2xx (all runs)", func(t target) string {
		var e, n int64
		seen := false
		for _, k := range []string{"max", "rate", "stream", "hold"} {
			if x := r.get(t, k); x != nil {
				seen = true
				e += x.Errors
				n += x.Non2xx
			}
		}
		if !seen {
			return ""
		}
		return fmt.Sprintf("%d / %d", e, n)
	})

	// Targets, per gateway variant.
	fmt.Fprint(w, "\n| target | limit |")
	for _, g := range gateways {
		fmt.Fprintf(w, " %s | |", g.label)
	}
	fmt.Fprint(w, "\n|---|---|")
	for range gateways {
		fmt.Fprint(w, "---|---|")
	}
	fmt.Fprintln(w)
	type check func(g target) (value string, ok bool, have bool)
	// goal prints one target row. A figure only counts when every run it is
	// computed from answered 2xx throughout: a fast 404 is not a fast proxy.
	goal := func(name, limit string, kind string, bases []target, c check) {
		fmt.Fprintf(w, "| %s | %s |", name, limit)
		for _, g := range gateways {
			if r.note(g) != "" {
				fmt.Fprint(w, " skipped | SKIP |")
				continue
			}
			var bad []string
			for _, t := range append([]target{g}, bases...) {
				if x := r.get(t, kind); x != nil && failed(x) > 0 {
					bad = append(bad, fmt.Sprintf("%s: %d failed", t.key, failed(x)))
				}
			}
			v, ok, have := c(g)
			switch {
			case !have:
				fmt.Fprint(w, " n/a | MISS |")
			case len(bad) > 0:
				fmt.Fprintf(w, " %s (%s) | **INVALID** |", v, strings.Join(bad, ", "))
			case ok:
				fmt.Fprintf(w, " %s | PASS |", v)
			default:
				fmt.Fprintf(w, " %s | **MISS** |", v)
			}
		}
		fmt.Fprintln(w)
	}
	both := func(g, base target, kind string) (*Result, *Result) {
		x, b := r.get(g, kind), r.get(base, kind)
		if x == nil || b == nil {
			return nil, nil
		}
		return x, b
	}
	goal("max throughput vs bare proxy", fmt.Sprintf("≥ %.0f%%", minThroughputVsBare*100), "max", []target{bare}, func(g target) (string, bool, bool) {
		x, b := both(g, bare, "max")
		if x == nil || b.RPS == 0 {
			return "", false, false
		}
		q := x.RPS / b.RPS
		return fmt.Sprintf("%.0f%%", q*100), q >= minThroughputVsBare, true
	})
	goal("CPU per request at 500 rps vs bare proxy", fmt.Sprintf("≤ %.0f×", maxCPUVsBare), "rate", []target{bare}, func(g target) (string, bool, bool) {
		x, b := both(g, bare, "rate")
		if x == nil || b.CPUusPerReq == 0 || x.CPUusPerReq == 0 {
			return "", false, false
		}
		q := x.CPUusPerReq / b.CPUusPerReq
		return fmt.Sprintf("%.2f×", q), q <= maxCPUVsBare, true
	})
	goal("added p50 vs direct at 500 rps", fmt.Sprintf("≤ %.1f ms", maxAddedP50ms), "rate", []target{direct}, func(g target) (string, bool, bool) {
		x, b := both(g, direct, "rate")
		if x == nil {
			return "", false, false
		}
		d := x.P50ms - b.P50ms
		return fmt.Sprintf("%+.3f ms", d), d <= maxAddedP50ms, true
	})
	goal("added p99 vs direct at 500 rps", fmt.Sprintf("≤ %.1f ms", maxAddedP99ms), "rate", []target{direct}, func(g target) (string, bool, bool) {
		x, b := both(g, direct, "rate")
		if x == nil {
			return "", false, false
		}
		d := x.P99ms - b.P99ms
		return fmt.Sprintf("%+.3f ms", d), d <= maxAddedP99ms, true
	})
	goal("added stream first-chunk p50 vs direct", fmt.Sprintf("≤ %.1f ms", maxAddedTTFBP50ms), "stream", []target{direct}, func(g target) (string, bool, bool) {
		x, b := both(g, direct, "stream")
		if x == nil || x.TTFBP50ms == 0 || b.TTFBP50ms == 0 {
			return "", false, false
		}
		d := x.TTFBP50ms - b.TTFBP50ms
		return fmt.Sprintf("%+.3f ms", d), d <= maxAddedTTFBP50ms, true
	})
	goal("RSS per held stream", fmt.Sprintf("≤ %.0f KiB", maxKiBPerStream), "hold", nil, func(g target) (string, bool, bool) {
		x := r.get(g, "hold")
		if x == nil || x.RSSBeforeKiB == 0 || x.HeldAtEnd == 0 {
			return "", false, false
		}
		ok := x.KiBPerStream <= maxKiBPerStream && x.HeldAtEnd == int64(x.Hold)
		return fmt.Sprintf("%.1f KiB (%d/%d held)", x.KiBPerStream, x.HeldAtEnd, x.Hold), ok, true
	})
	goal("idle RSS", fmt.Sprintf("≤ %.0f MiB", maxIdleRSSMiB), "warm", nil, func(g target) (string, bool, bool) {
		x := r.get(g, "idle")
		if x == nil || x.RSSKiB == 0 {
			return "", false, false
		}
		mib := float64(x.RSSKiB) / 1024
		return fmt.Sprintf("%.1f MiB", mib), mib <= maxIdleRSSMiB, true
	})
	goal("no errors, no non-2xx", "0", "", nil, func(g target) (string, bool, bool) {
		var e, n int64
		have := false
		for _, k := range []string{"warm", "max", "rate", "stream", "hold"} {
			if x := r.get(g, k); x != nil {
				have = true
				e += failed(x)
				n += attempts(x)
			}
		}
		return fmt.Sprintf("%d of %d", e, n), e == 0, have
	})
	for _, g := range gateways {
		if n := r.note(g); n != "" {
			fmt.Fprintf(w, "\n%s skipped: %s\n", g.label, n)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Latency is measured from each request's scheduled send time (open loop, no coordinated omission).")
	fmt.Fprintln(w, "CPU per request: utime+stime of the proxy process (the mock for (a)) over the measured window / requests.")
	fmt.Fprintln(w, "Ratios and differences compare runs of this same invocation on this same machine.")
}

// failed counts a run's transport errors and non-2xx answers.
func failed(x *Result) int64 { return x.Errors + x.Non2xx }

// attempts counts a run's requests, failed ones included.
func attempts(x *Result) int64 {
	if x.Hold > 0 {
		return int64(x.Hold)
	}
	return x.Requests + x.Errors // Requests already includes non-2xx answers
}
