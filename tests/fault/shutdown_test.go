package fault

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/mockupstream"
	"github.com/llmgw/gateway/models"
)

// TestSIGTERMDrains: SIGTERM with 200 requests and 10 streams in flight lets
// every one finish, exits 0, and leaves exactly 210 usage records.
func TestSIGTERMDrains(t *testing.T) {
	mock := mockupstream.New()
	mock.SetRecording(false)
	t.Cleanup(mock.Close)
	p := startProc(t, map[string]string{"GATEWAY_SERVER_SHUTDOWN_GRACE": "10s"})

	p.admin(t, "POST", "/admin/providers", map[string]any{"name": "mock", "type": "openai", "api_base": mock.URL(), "api_key": "sk-up"})
	p.admin(t, "POST", "/admin/models/aliases", map[string]any{"alias": "slow", "provider": "mock", "model": "m+slow-500", "routing_type": "simple"})
	p.admin(t, "POST", "/admin/models/aliases", map[string]any{"alias": "gappy", "provider": "mock", "model": "m+gap-100+chunks-15", "routing_type": "simple"})
	key, _ := p.admin(t, "POST", "/admin/keys", map[string]any{"name": "k"})["key"].(string)
	// The catalog of the binary reloads on admin writes; give it a moment.
	time.Sleep(100 * time.Millisecond)

	tr := &http.Transport{MaxIdleConnsPerHost: 300, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
	)
	fail := func(s string) { mu.Lock(); failures = append(failures, s); mu.Unlock() }
	send := func(model string, stream bool) {
		defer wg.Done()
		body, _ := json.Marshal(chatBody(model, stream))
		req, _ := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			fail(model + ": " + err.Error())
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			fail(model + ": " + resp.Status + " " + string(raw))
			return
		}
		if stream && !endsDone(raw) {
			fail("stream did not end with [DONE]: " + string(raw))
		}
	}
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go send("slow", false)
	}
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go send("gappy", true)
	}
	// In flight: every request reached the mock, which holds them 500ms
	// (streams: 15 chunks 100ms apart).
	if !eventually(5*time.Second, func() bool { return mock.Total() == 210 }) {
		t.Fatalf("only %d of 210 requests reached the upstream", mock.Total())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("gateway exit: %v\n%s", err, p.out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not exit within 20s of SIGTERM")
	}
	for i, f := range failures {
		if i < 5 {
			t.Errorf("request failed: %s", f)
		}
	}
	if len(failures) > 0 {
		t.Fatalf("%d of 210 requests failed during shutdown", len(failures))
	}
	db, err := models.Open(config.DatabaseConfig{Driver: "sqlite", DSN: p.dbPath})
	if err != nil {
		t.Fatal(err)
	}
	defer models.Close(db)
	var rows []models.UsageRecord
	if err := db.Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 210 {
		t.Fatalf("usage records after shutdown: %d, want 210", len(rows))
	}
	checkUnique(t, rows)
	for _, r := range rows {
		if r.Status != 200 {
			t.Fatalf("usage record with status %d: %+v", r.Status, r)
		}
	}
}
