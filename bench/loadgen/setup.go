package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// runSetup creates, through the admin API, what the gateway benchmark needs:
// a provider pointing at the mock upstream, an alias with prices (so the budget
// path does real arithmetic), and a key whose limits and budget are on but far
// out of reach. It prints the new key (returned once by the API) on stdout.
func runSetup(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	admin := fs.String("admin", "", "gateway base URL, e.g. http://127.0.0.1:8080 (required)")
	master := fs.String("master", "sk-admin-bench", "admin master key")
	upstream := fs.String("upstream", "", "provider api_base, e.g. http://127.0.0.1:9000/v1 (required)")
	upKey := fs.String("upstream-key", "sk-mock", "provider api_key")
	slowModel := fs.String("slow-model", "", "optional upstream model of a second alias <alias>-slow (e.g. a slow-stream directive model)")
	provider := fs.String("provider", "mock", "provider name")
	alias := fs.String("alias", "bench-model", "alias name")
	model := fs.String("model", "gpt-4o-mini", "upstream model of the alias")
	rpm := fs.Int64("rpm", 1_000_000_000, "key rpm_limit (on, never reached)")
	tpm := fs.Int64("tpm", 2_000_000_000, "key tpm_limit (on, never reached)")
	budget := fs.Float64("budget", 1_000_000, "key budget_limit in USD (on, never reached)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *admin == "" || *upstream == "" {
		return errors.New("setup: -admin and -upstream are required")
	}
	base := strings.TrimRight(*admin, "/")
	c := &http.Client{Timeout: 10 * time.Second}
	post := func(path string, body any, okConflict bool) (map[string]any, error) {
		b, _ := json.Marshal(body)
		req, err := http.NewRequest("POST", base+path, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+*master)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return nil, fmt.Errorf("POST %s: %w", path, err)
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode == http.StatusConflict && okConflict {
			fmt.Fprintf(os.Stderr, "setup: POST %s: already exists, reusing\n", path)
			return nil, nil
		}
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, bytes.TrimSpace(rb))
		}
		var out map[string]any
		if err := json.Unmarshal(rb, &out); err != nil {
			return nil, fmt.Errorf("POST %s: %w", path, err)
		}
		return out, nil
	}
	if _, err := post("/admin/providers", map[string]any{
		"name": *provider, "type": "openai", "api_base": *upstream, "api_key": *upKey,
	}, true); err != nil {
		return err
	}
	aliasTo := func(alias, model string) error {
		_, err := post("/admin/models/aliases", map[string]any{
			"alias": alias, "provider": *provider, "model": model, "routing_type": "simple",
			"input_price_per_1k": 0.00015, "output_price_per_1k": 0.0006,
		}, true)
		return err
	}
	if err := aliasTo(*alias, *model); err != nil {
		return err
	}
	if *slowModel != "" {
		if err := aliasTo(*alias+"-slow", *slowModel); err != nil {
			return err
		}
	}
	key, err := post("/admin/keys", map[string]any{
		"name":      "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"rpm_limit": *rpm, "tpm_limit": *tpm, "budget_limit": *budget,
	}, false)
	if err != nil {
		return err
	}
	k, _ := key["key"].(string)
	if k == "" {
		return errors.New("setup: key create response has no \"key\"")
	}
	fmt.Fprintln(stdout, k)
	return nil
}

// runWait polls -url until it answers 200, for at most -timeout.
func runWait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	u := fs.String("url", "", "URL to poll (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *u == "" {
		return errors.New("wait: -url is required")
	}
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(*timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		resp, err := c.Get(*u)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("wait: %s not ready after %s (last: %s)", *u, *timeout, last)
}

// runFreeport prints -n distinct free loopback ports, space separated.
func runFreeport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("freeport", flag.ContinueOnError)
	n := fs.Int("n", 1, "how many ports")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ports []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range *n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ls = append(ls, l)
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	fmt.Fprintln(stdout, strings.Join(ports, " "))
	return nil
}

// runRSS prints {"rss_kib": N, "rss_anon_kib": A, "rss_file_kib": F} for
// -pid. The split matters for a large binary: its mapped, clean text pages
// count in VmRSS (RssFile) but are shared and reclaimable.
func runRSS(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("rss", flag.ContinueOnError)
	pid := fs.Int("pid", 0, "process id (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kib, err := readRSSKiB(*pid)
	if err != nil {
		return err
	}
	anon, _ := readStatusKiB(*pid, "RssAnon:")
	file, _ := readStatusKiB(*pid, "RssFile:")
	return json.NewEncoder(stdout).Encode(map[string]int64{"rss_kib": kib, "rss_anon_kib": anon, "rss_file_kib": file})
}
