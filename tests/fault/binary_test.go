package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// gatewayBinary builds the gateway once per test run.
func gatewayBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gw-fault-bin-")
		if err != nil {
			buildErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		binPath = filepath.Join(dir, "gw")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// proc is a running gateway binary.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	dbPath string
	out    *bytes.Buffer
	done   chan error
}

const binMaster = "sk-admin-fault"

// startProc starts the binary on a free loopback port with a fresh SQLite
// database and waits until /health answers.
func startProc(t *testing.T, extraEnv map[string]string) *proc {
	t.Helper()
	bin := gatewayBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	p := &proc{addr: fmt.Sprintf("127.0.0.1:%d", port), dbPath: filepath.Join(dir, "gw.db"), out: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd := exec.Command(bin, "-config=")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("GATEWAY_SERVER_PORT=%d", port),
		"GATEWAY_DATABASE_DRIVER=sqlite",
		"GATEWAY_DATABASE_DSN="+p.dbPath,
		"GATEWAY_ADMIN_MASTER_KEY="+binMaster,
		"GATEWAY_SECURITY_ENCRYPTION_KEY=fault-test-encryption-key",
		"GATEWAY_LOG_LEVEL=warn",
	)
	for k, v := range extraEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd = cmd
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("gateway output:\n%s", p.out.String())
		}
	})
	c := &http.Client{Timeout: time.Second}
	if !eventually(15*time.Second, func() bool {
		resp, err := c.Get("http://" + p.addr + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}) {
		t.Fatalf("gateway did not start:\n%s", p.out.String())
	}
	return p
}

// startBinary starts the gateway and returns its address.
func startBinary(t *testing.T, extraEnv map[string]string) string {
	return startProc(t, extraEnv).addr
}

// admin calls the binary's admin API and decodes the object it returns.
func (p *proc) admin(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+p.addr+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+binMaster)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	var m map[string]any
	_ = json.Unmarshal(out, &m)
	return m
}
