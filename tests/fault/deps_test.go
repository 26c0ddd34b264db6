package fault

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/tests/faultnet"
	"github.com/llmgw/gateway/tests/testenv"
)

// redisProc is a private redis-server on a loopback port (the shared one on
// 6379 is never touched).
type redisProc struct {
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

func startRedis(t *testing.T, port int) *redisProc {
	t.Helper()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	r := &redisProc{port: port, done: make(chan struct{})}
	r.cmd = exec.Command("/usr/bin/redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(r.kill)
	if !eventually(5*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatal("redis-server did not start")
	}
	return r
}

func (r *redisProc) kill() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

func (r *redisProc) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// limiterKeys counts the gateway's rate-limit keys in Redis.
func limiterKeys(t *testing.T, url string) int {
	t.Helper()
	opts, _ := redis.ParseURL(url)
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	keys, err := c.Keys(ctx, "gw:rl:*").Result()
	if err != nil {
		return -1
	}
	return len(keys)
}

// TestRedisKilledAndRestarted: with fail_open the gateway keeps answering
// while Redis is down and returns to Redis once it is back; without it,
// requests are refused with 503 while Redis is down.
func TestRedisKilledAndRestarted(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		t.Run(fmt.Sprintf("fail_open=%v", failOpen), func(t *testing.T) {
			port := freePort(t)
			r := startRedis(t, port)
			g := newGW(t, "sqlite", func(c *config.Config) {
				c.Redis.URL = r.url()
				c.Redis.FailOpen = failOpen
			})
			g.alias("m", "mock", "gpt-4o")
			key := g.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "limited", "rpm_limit": 100000, "tpm_limit": 100000000})
			g.key = key["key"].(string)

			sent := 0
			send := func(want int) {
				t.Helper()
				resp, raw := g.chat("m")
				sent++
				if resp.StatusCode != want {
					t.Fatalf("request %d: %d, want %d: %s", sent, resp.StatusCode, want, raw)
				}
				if want == 503 && errType(t, raw) != "service_unavailable" {
					t.Fatalf("redis down: %s", raw)
				}
			}
			for i := 0; i < 5; i++ {
				send(200)
			}
			if n := limiterKeys(t, r.url()); n <= 0 {
				t.Fatalf("limiter does not use Redis: %d keys", n)
			}
			r.kill()
			want := 200
			if !failOpen {
				want = 503
			}
			// 1.5s down: spans the failover's once-a-second probes of Redis,
			// which must not stall the request that carries them.
			for i := 0; i < 15; i++ {
				start := time.Now()
				send(want)
				if d := time.Since(start); d > 750*time.Millisecond {
					t.Fatalf("request %d while Redis is down took %v", sent, d)
				}
				time.Sleep(100 * time.Millisecond)
			}
			startRedis(t, port) // same port, empty data
			// The failover probes Redis at most once per second.
			back := eventually(5*time.Second, func() bool {
				resp, _ := g.chat("m")
				sent++
				return resp.StatusCode == 200 && limiterKeys(t, r.url()) > 0
			})
			if !back {
				t.Fatal("limiter did not return to Redis after restart")
			}
			for i := 0; i < 5; i++ {
				send(200)
			}
			g.waitUsage(sent, 5*time.Second)
		})
	}
}

// TestDatabaseLost: PostgreSQL reached through a cuttable proxy. While it is
// cut, requests with a cached key still succeed and /health is 503
// unhealthy; after Restore every usage record is written exactly once.
func TestDatabaseLost(t *testing.T) {
	base := testenv.PostgresDSN()
	if base == "" || strings.Contains(base, "://") {
		t.Skip("needs a key=value PostgreSQL DSN (GATEWAY_TEST_POSTGRES_DSN)")
	}
	proxy, err := faultnet.New("127.0.0.1:5432")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	g := newGW(t, "postgres", func(c *config.Config) {
		c.Database.DSN += " host=127.0.0.1 port=" + proxy.Port() + " connect_timeout=2"
	})
	g.alias("m", "mock", "gpt-4o")
	g.alias("s", "mock", "gpt-4o+chunks-5")

	sent := 0
	for i := 0; i < 5; i++ {
		if resp, raw := g.chat("m"); resp.StatusCode != 200 {
			t.Fatalf("before cut: %d %s", resp.StatusCode, raw)
		}
		sent++
	}
	g.waitUsage(sent, 5*time.Second)

	proxy.Cut()
	// Let the catalog's 500ms reload poll fail a couple of times first: the
	// cached keys, aliases and providers must stay in use.
	time.Sleep(1200 * time.Millisecond)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for i := 0; i < 20; i++ {
		wg.Add(1)
		stream := i%4 == 0
		go func() {
			defer wg.Done()
			var code int
			var raw []byte
			if stream {
				resp, body := g.chatStream("s")
				code, raw = resp.StatusCode, body
				if code == 200 && !endsDone(raw) {
					code = -1
				}
			} else {
				resp, body := g.chat("m")
				code, raw = resp.StatusCode, body
			}
			if code != 200 {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%d %s", code, raw))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sent += 20
	if len(bad) > 0 {
		t.Fatalf("%d requests failed while the database was cut; first: %s", len(bad), bad[0])
	}
	code, h := g.health()
	if code != 503 || h["status"] != "unhealthy" {
		t.Fatalf("/health while the database is cut: %d %v", code, h)
	}
	time.Sleep(300 * time.Millisecond) // the usage writer fails and retries meanwhile

	proxy.Restore()
	if !eventually(10*time.Second, func() bool { c, _ := g.health(); return c == 200 }) {
		t.Fatal("/health did not recover after Restore")
	}
	rows := g.waitUsage(sent, 15*time.Second)
	for _, r := range rows {
		if r.Status != 200 {
			t.Fatalf("usage record status %d: %+v", r.Status, r)
		}
	}
}
