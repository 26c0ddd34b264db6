package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/tests/testenv"
)

func TestItems(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		resp, raw := env.Do("GET", "/items", nil, nil)
		if resp.StatusCode != 200 || string(raw) != "[]" {
			t.Fatalf("empty list: %d %s", resp.StatusCode, raw)
		}
		created := []struct {
			body, want string
		}{
			{`{"name":"first"}`, `{"id":1,"name":"first","description":null}`},
			{`{"name":"  second  ","description":"two"}`, `{"id":2,"name":"second","description":"two"}`},
			{`{"name":"third","description":null}`, `{"id":3,"name":"third","description":null}`},
			{`{"name":"` + strings.Repeat("n", 255) + `","description":"` + strings.Repeat("d", 2000) + `"}`, ``},
		}
		for _, c := range created {
			resp, raw := env.Do("POST", "/items", c.body, nil)
			if resp.StatusCode != 200 || (c.want != "" && string(raw) != c.want) {
				t.Fatalf("POST %s: %d %s", c.body, resp.StatusCode, raw)
			}
		}
		resp, raw = env.Do("GET", "/items", nil, nil)
		var list []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &list); err != nil || resp.StatusCode != 200 || len(list) != 4 {
			t.Fatalf("list: %d %s", resp.StatusCode, raw)
		}
		for i, it := range list {
			if it.ID != int64(i+1) {
				t.Fatalf("order: %s", raw)
			}
		}
		if resp, raw := env.Do("GET", "/items/2", nil, nil); resp.StatusCode != 200 || string(raw) != `{"id":2,"name":"second","description":"two"}` {
			t.Fatalf("get: %d %s", resp.StatusCode, raw)
		}

		invalid := []struct{ name, method, path, body string }{
			{"bad json", "POST", "/items", `{"name":`},
			{"empty body", "POST", "/items", ``},
			{"array", "POST", "/items", `["x"]`},
			{"missing name", "POST", "/items", `{"description":"d"}`},
			{"null name", "POST", "/items", `{"name":null}`},
			{"empty name", "POST", "/items", `{"name":""}`},
			{"blank name", "POST", "/items", `{"name":"   "}`},
			{"long name", "POST", "/items", `{"name":"` + strings.Repeat("n", 256) + `"}`},
			{"name number", "POST", "/items", `{"name":5}`},
			{"description number", "POST", "/items", `{"name":"x","description":5}`},
			{"long description", "POST", "/items", `{"name":"x","description":"` + strings.Repeat("d", 2001) + `"}`},
			{"id not integer", "GET", "/items/abc", ``},
			{"id float", "GET", "/items/1.5", ``},
		}
		for _, c := range invalid {
			t.Run(c.name, func(t *testing.T) {
				var body any
				if c.method == "POST" {
					body = c.body
				}
				resp, raw := env.Do(c.method, c.path, body, nil)
				var e map[string]any
				_ = json.Unmarshal(raw, &e)
				detail, ok := e["detail"].(string)
				if resp.StatusCode != 422 || !ok || detail == "" || len(e) != 1 {
					t.Fatalf("%d %s", resp.StatusCode, raw)
				}
			})
		}
		for _, path := range []string{"/items/999", "/items/0", "/items/-1"} {
			if resp, raw := env.Do("GET", path, nil, nil); resp.StatusCode != 404 || string(raw) != `{"detail":"Item not found"}` {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, raw)
			}
		}
		// Nothing invalid was stored: the next id is 5.
		if _, raw := env.Do("POST", "/items", `{"name":"fifth"}`, nil); !strings.HasPrefix(string(raw), `{"id":5,`) {
			t.Fatalf("next id: %s", raw)
		}
	})
}

func TestItemsDisabled(t *testing.T) {
	env := testenv.New(t, "sqlite", func(c *config.Config) { c.Items.Enabled = false })
	for _, req := range [][2]string{{"GET", "/items"}, {"POST", "/items"}, {"GET", "/items/1"}} {
		resp, raw := env.Do(req[0], req[1], nil, nil)
		if typ, _, _ := testenv.ErrorOf(t, raw); resp.StatusCode != 404 || typ != "not_found_error" {
			t.Fatalf("%v: %d %s", req, resp.StatusCode, raw)
		}
	}
	if resp, _ := env.Do("GET", "/health", nil, nil); resp.StatusCode != 200 {
		t.Fatal("health")
	}
}

// GATEWAY_ITEMS_ENABLED switches the group off through config.Load.
func TestItemsDisabledByEnv(t *testing.T) {
	t.Setenv("GATEWAY_ITEMS_ENABLED", "false")
	t.Setenv("GATEWAY_SECURITY_ENCRYPTION_KEY", "k")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, "sqlite", func(c *config.Config) { c.Items = cfg.Items })
	if resp, raw := env.Do("GET", "/items", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
}
