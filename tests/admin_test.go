package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/secret"
	"github.com/llmgw/gateway/tests/testenv"
)

// apiCase is one request and what must come back: the status, and for
// errors the envelope's type and (a subset of) its details.fields reasons.
type apiCase struct {
	name    string
	method  string
	path    string
	body    any
	status  int
	errType string
	fields  map[string]string // field → reason substring
	msg     string            // message substring
}

func runCases(t *testing.T, env *testenv.Env, cases []apiCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := env.Admin(tc.method, tc.path, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw)
			}
			if tc.errType == "" {
				return
			}
			typ, msg, _ := testenv.ErrorOf(t, raw)
			if typ != tc.errType {
				t.Errorf("type %q, want %q", typ, tc.errType)
			}
			if tc.msg != "" && !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not contain %q", msg, tc.msg)
			}
			got := testenv.FieldReasons(t, raw)
			for f, want := range tc.fields {
				if !strings.Contains(got[f], want) {
					t.Errorf("field %s: reason %q, want %q (all: %v)", f, got[f], want, got)
				}
			}
		})
	}
}

const providerSecret = "sk-upstream-SECRET-123456"

func TestAdminProviders(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		p := env.MustAdmin(201, "POST", "/admin/providers", map[string]any{
			"name": "openai", "api_base": "https://api.openai.com/v1/", "api_key": providerSecret,
			"rpm_limit": 60, "tpm_limit": 1000,
		})
		id := p["id"].(string)
		want := map[string]any{"name": "openai", "type": "openai", "api_base": "https://api.openai.com/v1",
			"api_version": nil, "rpm_limit": 60.0, "tpm_limit": 1000.0, "enabled": true, "api_key_set": true}
		for k, v := range want {
			if p[k] != v {
				t.Errorf("%s = %v, want %v", k, p[k], v)
			}
		}
		if _, ok := p["api_key"]; ok {
			t.Error("api_key returned")
		}
		for _, k := range []string{"created_at", "updated_at"} {
			if _, err := time.Parse(time.RFC3339, p[k].(string)); err != nil || !strings.HasSuffix(p[k].(string), "Z") {
				t.Errorf("%s %v not RFC 3339 UTC", k, p[k])
			}
		}
		// Sealed at rest, not in clear.
		row, err := env.App.Stores.Providers.Get(context.Background(), id)
		if err != nil || row.APIKeyEnc == "" || strings.Contains(row.APIKeyEnc, providerSecret) {
			t.Fatalf("stored key %q (%v)", row.APIKeyEnc, err)
		}

		inferred := []struct{ name, base, explicit, want string }{
			{"my-anthropic", "https://api.anthropic.com", "", "anthropic"},
			{"corp", "https://corp.openai.azure.com", "", "azure"},
			{"groq", "https://api.groq.com/openai/v1", "", "openai"},
			{"claude-proxy", "https://proxy.local", "anthropic", "anthropic"},
		}
		for _, in := range inferred {
			body := map[string]any{"name": in.name, "api_base": in.base}
			if in.explicit != "" {
				body["type"] = in.explicit
			}
			got := env.MustAdmin(201, "POST", "/admin/providers", body)
			if got["type"] != in.want || got["api_key_set"] != false {
				t.Errorf("%s: type %v api_key_set %v", in.name, got["type"], got["api_key_set"])
			}
		}

		runCases(t, env, []apiCase{
			{name: "missing name", method: "POST", path: "/admin/providers", body: map[string]any{"api_base": "https://x"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"name": "is required"}},
			{name: "missing api_base", method: "POST", path: "/admin/providers", body: map[string]any{"name": "x"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"api_base": "is required"}},
			{name: "not http url", method: "POST", path: "/admin/providers", body: map[string]any{"name": "x", "api_base": "ftp://x"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"api_base": "http(s) URL"}},
			{name: "not a url", method: "POST", path: "/admin/providers", body: map[string]any{"name": "x", "api_base": "openai"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"api_base": "http(s) URL"}},
			{name: "bad type", method: "POST", path: "/admin/providers", body: map[string]any{"name": "x", "api_base": "https://x", "type": "cohere"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"type": "must be one of: openai anthropic azure"}},
			{name: "negative rpm", method: "POST", path: "/admin/providers", body: map[string]any{"name": "x", "api_base": "https://x", "rpm_limit": -1},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"rpm_limit": "must be >= 0"}},
			{name: "rpm wrong type", method: "POST", path: "/admin/providers", body: `{"name":"x","api_base":"https://x","rpm_limit":"ten"}`,
				status: 400, errType: "invalid_request_error", fields: map[string]string{"rpm_limit": "must be an integer"}},
			{name: "rpm fraction", method: "POST", path: "/admin/providers", body: `{"name":"x","api_base":"https://x","tpm_limit":1.5}`,
				status: 400, errType: "invalid_request_error", fields: map[string]string{"tpm_limit": "must be an integer"}},
			{name: "enabled wrong type", method: "POST", path: "/admin/providers", body: `{"name":"x","api_base":"https://x","enabled":"yes"}`,
				status: 400, errType: "invalid_request_error", fields: map[string]string{"enabled": "must be a boolean"}},
			{name: "name wrong type", method: "POST", path: "/admin/providers", body: `{"name":5,"api_base":"https://x"}`,
				status: 400, errType: "invalid_request_error", fields: map[string]string{"name": "must be a string"}},
			{name: "blank name", method: "POST", path: "/admin/providers", body: map[string]any{"name": "  ", "api_base": "https://x"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"name": "must not be empty"}},
			{name: "malformed json", method: "POST", path: "/admin/providers", body: `{"name": "x",`,
				status: 400, errType: "invalid_request_error", msg: "Request body is not valid JSON."},
			{name: "empty body", method: "POST", path: "/admin/providers", body: ``,
				status: 400, errType: "invalid_request_error", msg: "not valid JSON"},
			{name: "array body", method: "POST", path: "/admin/providers", body: `[]`,
				status: 400, errType: "invalid_request_error", msg: "JSON object"},
			{name: "duplicate name", method: "POST", path: "/admin/providers", body: map[string]any{"name": "openai", "api_base": "https://x"},
				status: 409, errType: "conflict_error", msg: "already exists"},
			{name: "get unknown", method: "GET", path: "/admin/providers/00000000-0000-0000-0000-000000000000", status: 404, errType: "not_found_error"},
			{name: "put unknown", method: "PUT", path: "/admin/providers/nope", body: map[string]any{"rpm_limit": 1}, status: 404, errType: "not_found_error"},
			{name: "delete unknown", method: "DELETE", path: "/admin/providers/nope", status: 404, errType: "not_found_error"},
			{name: "put null name", method: "PUT", path: "/admin/providers/" + id, body: `{"name":null}`,
				status: 400, errType: "invalid_request_error", fields: map[string]string{"name": "must not be null"}},
			{name: "put bad url", method: "PUT", path: "/admin/providers/" + id, body: map[string]any{"api_base": "x"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"api_base": "http(s) URL"}},
			{name: "put duplicate name", method: "PUT", path: "/admin/providers/" + id, body: map[string]any{"name": "groq"},
				status: 409, errType: "conflict_error"},
			{name: "list bad enabled", method: "GET", path: "/admin/providers?enabled=maybe",
				status: 400, errType: "invalid_request_error", fields: map[string]string{"enabled": "boolean"}},
		})

		// Partial update: only present fields change.
		up := env.MustAdmin(200, "PUT", "/admin/providers/"+id, map[string]any{"rpm_limit": 5, "api_version": "2024-06-01"})
		if up["rpm_limit"] != 5.0 || up["tpm_limit"] != 1000.0 || up["name"] != "openai" || up["api_version"] != "2024-06-01" || up["api_key_set"] != true {
			t.Fatalf("partial update: %v", up)
		}
		up = env.MustAdmin(200, "PUT", "/admin/providers/"+id, `{"api_version":null,"enabled":false}`)
		if up["api_version"] != nil || up["enabled"] != false || up["rpm_limit"] != 5.0 {
			t.Fatalf("null clears: %v", up)
		}
		got := env.MustAdmin(200, "GET", "/admin/providers/"+id, nil)
		if got["enabled"] != false || got["api_version"] != nil {
			t.Fatalf("get after update: %v", got)
		}
		list := env.MustAdmin(200, "GET", "/admin/providers?enabled=false", nil)
		if list["total"] != 1.0 {
			t.Fatalf("enabled=false: %v", list)
		}
		list = env.MustAdmin(200, "GET", "/admin/providers?enabled=true", nil)
		if list["total"] != 4.0 {
			t.Fatalf("enabled=true: %v", list)
		}
		up = env.MustAdmin(200, "PUT", "/admin/providers/"+id, map[string]any{"api_key": ""})
		if up["api_key_set"] != false {
			t.Fatalf("clearing the key: %v", up)
		}

		del := env.MustAdmin(200, "DELETE", "/admin/providers/"+id, nil)
		if del["id"] != id || del["deleted"] != true {
			t.Fatalf("delete: %v", del)
		}
		env.MustAdmin(404, "GET", "/admin/providers/"+id, nil)
	})
}

// The provider api key never appears in any response.
func TestAdminProviderKeyNeverReturned(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		var bodies [][]byte
		call := func(method, path string, body any) map[string]any {
			resp, raw := env.Admin(method, path, body)
			bodies = append(bodies, raw)
			if resp.StatusCode >= 300 {
				t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
			}
			return testenv.Object(t, raw)
		}
		p := call("POST", "/admin/providers", map[string]any{"name": "a", "api_base": "https://x", "api_key": providerSecret})
		id := p["id"].(string)
		call("GET", "/admin/providers/"+id, nil)
		call("GET", "/admin/providers", nil)
		call("PUT", "/admin/providers/"+id, map[string]any{"api_key": providerSecret + "2"})
		call("PUT", "/admin/providers/"+id, map[string]any{"rpm_limit": 3})
		call("POST", "/admin/models/aliases", map[string]any{"alias": "m", "provider": "a", "model": "x"})
		call("GET", "/admin/models/aliases", nil)
		_, raw := env.Do("GET", "/health", nil, nil)
		bodies = append(bodies, raw)
		_, raw = env.Admin("DELETE", "/admin/providers/"+id, nil) // 409: in use
		bodies = append(bodies, raw)
		for _, b := range bodies {
			if strings.Contains(string(b), providerSecret) || strings.Contains(string(b), "api_key\"") {
				t.Fatalf("secret or api_key field in response: %s", b)
			}
		}
	})
}

func TestAdminProviderInUse(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		ids := map[string]string{}
		for _, n := range []string{"p-simple", "p-lb", "p-chain", "p-free"} {
			ids[n] = env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": n, "api_base": "https://x"})["id"].(string)
		}
		env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{"alias": "s", "provider": "p-simple", "model": "m"})
		env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{"alias": "lb", "routing_type": "load_balance",
			"routing_config": map[string]any{"targets": []any{map[string]any{"provider": "p-lb", "model": "m", "weight": 2}}}})
		env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{"alias": "fb", "routing_type": "fallback",
			"routing_config": map[string]any{"chain": []any{map[string]any{"provider": "p-free", "model": "m"}, map[string]any{"provider": "p-chain", "model": "m"}}}})
		for _, n := range []string{"p-simple", "p-lb", "p-chain"} {
			resp, raw := env.Admin("DELETE", "/admin/providers/"+ids[n], nil)
			if typ, msg, _ := testenv.ErrorOf(t, raw); resp.StatusCode != 409 || typ != "conflict_error" || !strings.Contains(msg, n) {
				t.Errorf("delete %s: %d %s", n, resp.StatusCode, raw)
			}
		}
		// Renaming a provider that aliases name is refused the same way.
		resp, raw := env.Admin("PUT", "/admin/providers/"+ids["p-simple"], map[string]any{"name": "renamed"})
		if resp.StatusCode != 409 {
			t.Errorf("rename in use: %d %s", resp.StatusCode, raw)
		}
		env.MustAdmin(200, "DELETE", "/admin/models/aliases/s", nil)
		env.MustAdmin(200, "DELETE", "/admin/providers/"+ids["p-simple"], nil)
	})
}

func TestAdminProjects(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		p := env.MustAdmin(201, "POST", "/admin/projects", map[string]any{"name": "alpha"})
		id := p["id"].(string)
		if p["budget_period"] != "monthly" || p["budget_limit"] != nil || p["current_spend"] != 0.0 || p["description"] != "" {
			t.Fatalf("defaults: %v", p)
		}
		runCases(t, env, []apiCase{
			{name: "missing name", method: "POST", path: "/admin/projects", body: map[string]any{"description": "d"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"name": "is required"}},
			{name: "zero budget", method: "POST", path: "/admin/projects", body: map[string]any{"name": "b", "budget_limit": 0},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"budget_limit": "must be > 0"}},
			{name: "bad period", method: "POST", path: "/admin/projects", body: map[string]any{"name": "b", "budget_period": "yearly"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"budget_period": "must be one of: daily weekly monthly total"}},
			{name: "budget wrong type", method: "POST", path: "/admin/projects", body: `{"name":"b","budget_limit":"10"}`,
				status: 400, errType: "invalid_request_error", fields: map[string]string{"budget_limit": "must be a number"}},
			{name: "duplicate", method: "POST", path: "/admin/projects", body: map[string]any{"name": "alpha"}, status: 409, errType: "conflict_error"},
			{name: "unknown", method: "GET", path: "/admin/projects/nope", status: 404, errType: "not_found_error"},
			{name: "put unknown", method: "PUT", path: "/admin/projects/nope", body: map[string]any{}, status: 404, errType: "not_found_error"},
			{name: "delete unknown", method: "DELETE", path: "/admin/projects/nope", status: 404, errType: "not_found_error"},
		})
		up := env.MustAdmin(200, "PUT", "/admin/projects/"+id, map[string]any{"budget_limit": 12.5, "budget_period": "daily", "description": "team"})
		if up["budget_limit"] != 12.5 || up["budget_period"] != "daily" || up["name"] != "alpha" || up["description"] != "team" {
			t.Fatalf("update: %v", up)
		}
		up = env.MustAdmin(200, "PUT", "/admin/projects/"+id, `{"budget_limit":null}`)
		if up["budget_limit"] != nil || up["budget_period"] != "daily" {
			t.Fatalf("clear budget: %v", up)
		}

		// current_spend of a key: usage of this period only, reconciled from
		// the usage table the first time the key's budget is read.
		k := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "k", "project_id": id})
		keyID := k["id"].(string)
		now := time.Now().UTC()
		err := env.App.Stores.Usage.InsertBatch(context.Background(), []models.UsageRecord{
			{RequestID: "r1", KeyID: keyID, ProjectID: id, Cost: 1.25, Status: 200, CreatedAt: now},
			{RequestID: "r2", KeyID: keyID, ProjectID: id, Cost: 0.5, Status: 200, CreatedAt: now},
			{RequestID: "r3", KeyID: keyID, ProjectID: id, Cost: 100, Status: 200, CreatedAt: now.AddDate(0, 0, -2)},
		})
		if err != nil {
			t.Fatal(err)
		}
		// The project's counter was already loaded (its responses above carry
		// current_spend), so rows written behind the gateway's back do not show
		// there; the key's counter is loaded now, from the usage table.
		kg := env.MustAdmin(200, "GET", "/admin/keys/"+keyID, nil)
		wantMonthly := 1.75
		if now.AddDate(0, 0, -2).Month() == now.Month() {
			wantMonthly = 101.75
		}
		if kg["budget_period"] != "monthly" || kg["current_spend"] != wantMonthly {
			t.Fatalf("key monthly spend %v, want %v", kg["current_spend"], wantMonthly)
		}
		env.MustAdmin(200, "PUT", "/admin/keys/"+keyID, map[string]any{"budget_period": "total"})
		if kg = env.MustAdmin(200, "GET", "/admin/keys/"+keyID, nil); kg["current_spend"] != 101.75 {
			t.Fatalf("key total spend %v", kg["current_spend"])
		}

		// A project with keys cannot be deleted; without, it can.
		resp, raw := env.Admin("DELETE", "/admin/projects/"+id, nil)
		if resp.StatusCode != 409 {
			t.Fatalf("delete with keys: %d %s", resp.StatusCode, raw)
		}
		env.MustAdmin(200, "DELETE", "/admin/keys/"+keyID, nil)
		if d := env.MustAdmin(200, "DELETE", "/admin/projects/"+id, nil); d["deleted"] != true {
			t.Fatalf("delete: %v", d)
		}
		env.MustAdmin(404, "GET", "/admin/projects/"+id, nil)
	})
}

var keyFormat = regexp.MustCompile(`^sk-gw-[0-9A-Za-z]{40}$`)

func TestAdminKeys(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		proj := env.MustAdmin(201, "POST", "/admin/projects", map[string]any{"name": "p"})["id"].(string)
		created := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{
			"name": "ci", "project_id": proj, "rpm_limit": 10, "tpm_limit": 100, "budget_limit": 5,
			"allowed_models": []string{"fast", "openai:gpt-4o"}, "expires_at": "2030-01-02T03:04:05+02:00",
		})
		full, _ := created["key"].(string)
		if !keyFormat.MatchString(full) || created["key_prefix"] != full[:12] {
			t.Fatalf("key %q prefix %v", full, created["key_prefix"])
		}
		for _, f := range []string{"id", "name", "key", "key_prefix", "enabled", "created_at", "project_id", "rpm_limit", "tpm_limit",
			"budget_limit", "budget_period", "allowed_models", "expires_at"} {
			if _, ok := created[f]; !ok {
				t.Errorf("create response lacks %s", f)
			}
		}
		if created["expires_at"] != "2030-01-02T01:04:05Z" || created["enabled"] != true || created["budget_period"] != "monthly" {
			t.Errorf("create response: %v", created)
		}
		if _, ok := created["current_spend"]; ok {
			t.Error("create response carries current_spend, which is not a stored field")
		}
		id := created["id"].(string)
		g := env.MustAdmin(200, "GET", "/admin/keys/"+id, nil)
		if g["current_spend"] != 0.0 || g["key_prefix"] != full[:12] {
			t.Errorf("read: %v", g)
		}
		// A later read shows the very timestamps the create response did
		// (PostgreSQL keeps microseconds, so nothing finer may be returned).
		if g["created_at"] != created["created_at"] || g["updated_at"] != created["updated_at"] {
			t.Errorf("timestamps: create %v/%v, read %v/%v", created["created_at"], created["updated_at"], g["created_at"], g["updated_at"])
		}

		// Only the hash is stored.
		row, err := env.App.Stores.Keys.Get(context.Background(), id)
		if err != nil || row.KeyHash != secret.Hash(full) {
			t.Fatalf("stored hash %q (%v)", row.KeyHash, err)
		}
		rowJSON, _ := json.Marshal(row)
		if strings.Contains(string(rowJSON), full) {
			t.Fatal("full key stored")
		}

		// Later reads never show the key.
		for _, path := range []string{"/admin/keys/" + id, "/admin/keys", "/admin/keys?project_id=" + proj} {
			_, raw := env.Admin("GET", path, nil)
			if strings.Contains(string(raw), full) || strings.Contains(string(raw), `"key":`) {
				t.Fatalf("%s shows the key: %s", path, raw)
			}
		}
		second := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "other"})
		if second["key"] == full || second["project_id"] != nil || len(second["allowed_models"].([]any)) != 0 {
			t.Fatalf("second key: %v", second)
		}

		runCases(t, env, []apiCase{
			{name: "missing name", method: "POST", path: "/admin/keys", body: map[string]any{}, status: 400, errType: "invalid_request_error",
				fields: map[string]string{"name": "is required"}},
			{name: "unknown project", method: "POST", path: "/admin/keys", body: map[string]any{"name": "x", "project_id": "nope"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"project_id": "must name an existing project"}},
			{name: "bad expires", method: "POST", path: "/admin/keys", body: map[string]any{"name": "x", "expires_at": "tomorrow"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"expires_at": "RFC 3339"}},
			{name: "models wrong type", method: "POST", path: "/admin/keys", body: `{"name":"x","allowed_models":"fast"}`,
				status: 400, errType: "invalid_request_error", fields: map[string]string{"allowed_models": "must be an array"}},
			{name: "empty model name", method: "POST", path: "/admin/keys", body: map[string]any{"name": "x", "allowed_models": []string{""}},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"allowed_models[0]": "must not be empty"}},
			{name: "negative tpm", method: "POST", path: "/admin/keys", body: map[string]any{"name": "x", "tpm_limit": -5},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"tpm_limit": "must be >= 0"}},
			{name: "negative budget", method: "POST", path: "/admin/keys", body: map[string]any{"name": "x", "budget_limit": -1},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"budget_limit": "must be > 0"}},
			{name: "bad period", method: "POST", path: "/admin/keys", body: map[string]any{"name": "x", "budget_period": "hourly"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"budget_period": "must be one of"}},
			{name: "unknown", method: "GET", path: "/admin/keys/nope", status: 404, errType: "not_found_error"},
			{name: "put unknown", method: "PUT", path: "/admin/keys/nope", body: map[string]any{"enabled": false}, status: 404, errType: "not_found_error"},
			{name: "put unknown project", method: "PUT", path: "/admin/keys/" + id, body: map[string]any{"project_id": "nope"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"project_id": "must name an existing project"}},
			{name: "filter bad enabled", method: "GET", path: "/admin/keys?enabled=2", status: 400, errType: "invalid_request_error",
				fields: map[string]string{"enabled": "boolean"}},
		})

		up := env.MustAdmin(200, "PUT", "/admin/keys/"+id, `{"enabled":false,"allowed_models":null,"expires_at":null}`)
		if up["enabled"] != false || len(up["allowed_models"].([]any)) != 0 || up["expires_at"] != nil || up["rpm_limit"] != 10.0 || up["project_id"] != proj {
			t.Fatalf("update: %v", up)
		}
		if _, ok := up["key"]; ok {
			t.Fatal("update returns the key")
		}
		if g := env.MustAdmin(200, "GET", "/admin/keys/"+id, nil); g["updated_at"] != up["updated_at"] || g["created_at"] != created["created_at"] {
			t.Errorf("timestamps after update: put %v, read %v/%v", up["updated_at"], g["created_at"], g["updated_at"])
		}
		if l := env.MustAdmin(200, "GET", "/admin/keys?project_id="+proj, nil); l["total"] != 1.0 {
			t.Fatalf("project filter: %v", l)
		}
		if l := env.MustAdmin(200, "GET", "/admin/keys?enabled=false", nil); l["total"] != 1.0 {
			t.Fatalf("enabled filter: %v", l)
		}
		if l := env.MustAdmin(200, "GET", "/admin/keys?enabled=true", nil); l["total"] != 1.0 {
			t.Fatalf("enabled filter: %v", l)
		}
		env.MustAdmin(200, "DELETE", "/admin/keys/"+id, nil)
		env.MustAdmin(404, "GET", "/admin/keys/"+id, nil)
		env.MustAdmin(404, "DELETE", "/admin/keys/"+id, nil)
	})
}

func TestAdminAliases(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": "openai", "api_base": "https://x"})
		env.MustAdmin(201, "POST", "/admin/providers", map[string]any{"name": "anthropic", "api_base": "https://y"})
		a := env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{"alias": "openai/fast", "provider": "openai", "model": "gpt-4o-mini"})
		if a["routing_type"] != "simple" || a["enabled"] != true || a["input_price_per_1k"] != 0.0 || a["output_price_per_1k"] != 0.0 {
			t.Fatalf("defaults: %v", a)
		}
		lb := env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{
			"alias": "balanced", "routing_type": "load_balance", "input_price_per_1k": 0.5, "output_price_per_1k": 1.5,
			"routing_config": map[string]any{"targets": []any{
				map[string]any{"provider": "openai", "model": "a", "weight": 3},
				map[string]any{"provider": "anthropic", "model": "b", "weight": 1},
			}},
		})
		rc := lb["routing_config"].(map[string]any)
		if len(rc["targets"].([]any)) != 2 || lb["input_price_per_1k"] != 0.5 {
			t.Fatalf("load_balance: %v", lb)
		}
		env.MustAdmin(201, "POST", "/admin/models/aliases", map[string]any{"alias": "safe", "routing_type": "fallback",
			"routing_config": map[string]any{"chain": []any{map[string]any{"provider": "anthropic", "model": "c"}}}})

		runCases(t, env, []apiCase{
			{name: "missing alias", method: "POST", path: "/admin/models/aliases", body: map[string]any{"provider": "openai", "model": "m"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"alias": "is required"}},
			{name: "simple without provider and model", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"provider": "is required", "model": "is required"}},
			{name: "unknown provider", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x", "provider": "ghost", "model": "m"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"provider": "must name an existing provider (unknown: ghost)"}},
			{name: "bad routing type", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x", "routing_type": "random"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"routing_type": "must be one of: simple load_balance fallback"}},
			{name: "load_balance without targets", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x", "routing_type": "load_balance"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"routing_config.targets": "at least 1"}},
			{name: "zero weight", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x", "routing_type": "load_balance",
				"routing_config": map[string]any{"targets": []any{map[string]any{"provider": "openai", "model": "m", "weight": 0}}}},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"routing_config.targets[0].weight": "must be > 0"}},
			{name: "target unknown provider", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x", "routing_type": "load_balance",
				"routing_config": map[string]any{"targets": []any{map[string]any{"provider": "openai", "model": "m"}, map[string]any{"provider": "nope", "model": "m"}}}},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"routing_config.targets[1].provider": "must name an existing provider (unknown: nope)"}},
			{name: "fallback without chain", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x", "routing_type": "fallback"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"routing_config.chain": "at least 1"}},
			{name: "chain entry without model", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x", "routing_type": "fallback",
				"routing_config": map[string]any{"chain": []any{map[string]any{"provider": "openai"}}}},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"routing_config.chain[0].model": "is required"}},
			{name: "weight wrong type", method: "POST", path: "/admin/models/aliases", body: `{"alias":"x","routing_type":"load_balance","routing_config":{"targets":[{"provider":"openai","model":"m","weight":"heavy"}]}}`,
				status: 400, errType: "invalid_request_error", fields: map[string]string{"routing_config.targets.weight": "must be a number"}},
			{name: "negative price", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "x", "provider": "openai", "model": "m", "output_price_per_1k": -0.1},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"output_price_per_1k": "must be >= 0"}},
			{name: "duplicate", method: "POST", path: "/admin/models/aliases", body: map[string]any{"alias": "balanced", "provider": "openai", "model": "m"},
				status: 409, errType: "conflict_error"},
			{name: "unknown ref", method: "GET", path: "/admin/models/aliases/nope", status: 404, errType: "not_found_error"},
			{name: "put unknown", method: "PUT", path: "/admin/models/aliases/nope", body: map[string]any{"enabled": false}, status: 404, errType: "not_found_error"},
			{name: "delete unknown", method: "DELETE", path: "/admin/models/aliases/nope", status: 404, errType: "not_found_error"},
			{name: "put switches to fallback without chain", method: "PUT", path: "/admin/models/aliases/openai/fast", body: map[string]any{"routing_type": "fallback"},
				status: 400, errType: "invalid_request_error", fields: map[string]string{"routing_config.chain": "at least 1"}},
		})

		// By id and by name (names may contain "/").
		byID := env.MustAdmin(200, "GET", "/admin/models/aliases/"+a["id"].(string), nil)
		byName := env.MustAdmin(200, "GET", "/admin/models/aliases/openai/fast", nil)
		if byID["id"] != byName["id"] {
			t.Fatalf("by id %v, by name %v", byID, byName)
		}
		up := env.MustAdmin(200, "PUT", "/admin/models/aliases/balanced", map[string]any{"enabled": false, "output_price_per_1k": 2})
		if up["enabled"] != false || up["output_price_per_1k"] != 2.0 || up["input_price_per_1k"] != 0.5 || up["routing_type"] != "load_balance" {
			t.Fatalf("update by name: %v", up)
		}
		if l := env.MustAdmin(200, "GET", "/admin/models/aliases?enabled=false", nil); l["total"] != 1.0 {
			t.Fatalf("enabled filter: %v", l)
		}
		d := env.MustAdmin(200, "DELETE", "/admin/models/aliases/safe", nil)
		if d["deleted"] != true || d["id"] == "safe" {
			t.Fatalf("delete by name: %v", d)
		}
		env.MustAdmin(404, "GET", "/admin/models/aliases/safe", nil)
	})
}

func TestAdminPagination(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		for i := 1; i <= 5; i++ {
			env.MustAdmin(201, "POST", "/admin/projects", map[string]any{"name": fmt.Sprintf("p%d", i)})
		}
		names := func(l map[string]any) []string {
			var out []string
			for _, d := range l["data"].([]any) {
				out = append(out, d.(map[string]any)["name"].(string))
			}
			return out
		}
		l := env.MustAdmin(200, "GET", "/admin/projects", nil)
		if l["page"] != 1.0 || l["page_size"] != 20.0 || l["total"] != 5.0 || fmt.Sprint(names(l)) != "[p5 p4 p3 p2 p1]" {
			t.Fatalf("defaults, newest first: %v", l)
		}
		l = env.MustAdmin(200, "GET", "/admin/projects?page=2&page_size=2", nil)
		if fmt.Sprint(names(l)) != "[p3 p2]" || l["total"] != 5.0 || l["page"] != 2.0 || l["page_size"] != 2.0 {
			t.Fatalf("page 2: %v", l)
		}
		if l = env.MustAdmin(200, "GET", "/admin/projects?page=3&page_size=2", nil); fmt.Sprint(names(l)) != "[p1]" {
			t.Fatalf("last page: %v", l)
		}
		if l = env.MustAdmin(200, "GET", "/admin/projects?page=9&page_size=2", nil); len(l["data"].([]any)) != 0 || l["total"] != 5.0 {
			t.Fatalf("past the end: %v", l)
		}
		if l = env.MustAdmin(200, "GET", "/admin/projects?page_size=100", nil); len(l["data"].([]any)) != 5 {
			t.Fatalf("page_size 100: %v", l)
		}
		if l = env.MustAdmin(200, "GET", "/admin/providers", nil); l["total"] != 0.0 || l["data"] == nil {
			t.Fatalf("empty list must have data []: %v", l)
		}
		var cases []apiCase
		for _, list := range []string{"/admin/providers", "/admin/projects", "/admin/keys", "/admin/models/aliases"} {
			cases = append(cases,
				apiCase{name: list + " page 0", method: "GET", path: list + "?page=0", status: 400, errType: "invalid_request_error", fields: map[string]string{"page": "must be >= 1"}},
				apiCase{name: list + " page abc", method: "GET", path: list + "?page=abc", status: 400, errType: "invalid_request_error", fields: map[string]string{"page": "integer"}},
				apiCase{name: list + " page_size 0", method: "GET", path: list + "?page_size=0", status: 400, errType: "invalid_request_error", fields: map[string]string{"page_size": "must be >= 1"}},
				apiCase{name: list + " page_size 101", method: "GET", path: list + "?page_size=101", status: 400, errType: "invalid_request_error", fields: map[string]string{"page_size": "must be <= 100"}},
			)
		}
		runCases(t, env, cases)
	})
}

func TestAdminAuth(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		vk := env.MustAdmin(201, "POST", "/admin/keys", map[string]any{"name": "k"})["key"].(string)
		cases := []struct {
			name    string
			headers map[string]string
			status  int
		}{
			{"none", nil, 401},
			{"wrong bearer", map[string]string{"Authorization": "Bearer sk-admin-wrong"}, 401},
			{"wrong x-api-key", map[string]string{"X-API-Key": "nope"}, 401},
			{"virtual key", map[string]string{"Authorization": "Bearer " + vk}, 401},
			{"basic scheme", map[string]string{"Authorization": "Basic " + testenv.MasterKey}, 401},
			{"bearer", map[string]string{"Authorization": "Bearer " + testenv.MasterKey}, 200},
			{"bearer lower case", map[string]string{"Authorization": "bearer " + testenv.MasterKey}, 200},
			{"x-api-key", map[string]string{"X-API-Key": testenv.MasterKey}, 200},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp, raw := env.Do("GET", "/admin/projects", nil, tc.headers)
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw)
				}
				if tc.status == 401 {
					if typ, _, _ := testenv.ErrorOf(t, raw); typ != "authentication_error" {
						t.Fatalf("type %s", typ)
					}
				}
			})
		}
	})
}

func TestAdminWithoutMasterKey(t *testing.T) {
	env := testenv.New(t, "sqlite", func(c *config.Config) { c.Admin.MasterKey = "" })
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer "}, {"Authorization": "Bearer anything"}} {
		resp, raw := env.Do("GET", "/admin/providers", nil, h)
		typ, msg, _ := testenv.ErrorOf(t, raw)
		if resp.StatusCode != 401 || typ != "authentication_error" || !strings.Contains(msg, "GATEWAY_ADMIN_MASTER_KEY") {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	}
}

func TestAdminUsageStats(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		day := time.Date(2026, 3, 10, 9, 15, 0, 0, time.UTC)
		err := env.App.Stores.Usage.InsertBatch(context.Background(), []models.UsageRecord{
			{RequestID: "a", KeyID: "k1", ProjectID: "p1", Provider: "openai", Model: "fast", InputTokens: 100, OutputTokens: 50, TotalTokens: 150, Cost: 0.2, LatencyMS: 200, Status: 200, CreatedAt: day},
			{RequestID: "b", KeyID: "k1", ProjectID: "p1", Provider: "openai", Model: "fast", Status: 429, LatencyMS: 10, CreatedAt: day.Add(30 * time.Minute)},
			{RequestID: "c", KeyID: "k2", Provider: "anthropic", Model: "smart", InputTokens: 10, OutputTokens: 10, TotalTokens: 20, Cost: 0.1, LatencyMS: 90, Status: 200, CreatedAt: day.Add(26 * time.Hour)},
			{RequestID: "d", KeyID: "k2", Provider: "anthropic", Model: "smart", Cost: 5, Status: 200, CreatedAt: day.AddDate(0, 0, 5)}, // outside the range
		})
		if err != nil {
			t.Fatal(err)
		}
		q := "/admin/usage/stats?start_date=2026-03-10&end_date=2026-03-11"
		s := env.MustAdmin(200, "GET", q, nil)
		if s["start_date"] != "2026-03-10" || s["end_date"] != "2026-03-11" || s["group_by"] != "day" {
			t.Fatalf("echo: %v", s)
		}
		groups := func(s map[string]any) string {
			var g []string
			for _, r := range s["data"].([]any) {
				g = append(g, r.(map[string]any)["group"].(string))
			}
			return strings.Join(g, ",")
		}
		if groups(s) != "2026-03-10,2026-03-11" {
			t.Fatalf("day groups: %v", s["data"])
		}
		tot := s["totals"].(map[string]any)
		want := map[string]float64{"requests": 3, "errors": 1, "input_tokens": 110, "output_tokens": 60, "total_tokens": 170, "avg_latency_ms": 100}
		for k, v := range want {
			if tot[k] != v {
				t.Errorf("totals.%s = %v, want %v", k, tot[k], v)
			}
		}
		// 0.2 + 0.1 is 0.30000000000000004 in floating point; the API
		// rounds sums to the nano-dollar.
		if c := tot["cost"].(float64); c != 0.3 {
			t.Errorf("totals.cost = %v, want 0.3", c)
		}
		for gb, wantGroups := range map[string]string{
			"hour":     "2026-03-10T09:00:00Z,2026-03-11T11:00:00Z",
			"provider": "anthropic,openai",
			"model":    "fast,smart",
			"key":      "k1,k2",
		} {
			if s := env.MustAdmin(200, "GET", q+"&group_by="+gb, nil); groups(s) != wantGroups {
				t.Errorf("group_by=%s: %s", gb, groups(s))
			}
		}
		row := env.MustAdmin(200, "GET", q+"&group_by=key&key_id=k1", nil)["data"].([]any)
		if len(row) != 1 || row[0].(map[string]any)["requests"] != 2.0 || row[0].(map[string]any)["errors"] != 1.0 {
			t.Errorf("key filter: %v", row)
		}
		for _, f := range []string{"project_id=p1", "provider=openai", "model=fast"} {
			if s := env.MustAdmin(200, "GET", q+"&"+f, nil); s["totals"].(map[string]any)["requests"] != 2.0 {
				t.Errorf("%s: %v", f, s["totals"])
			}
		}
		def := env.MustAdmin(200, "GET", "/admin/usage/stats", nil)
		today := time.Now().UTC().Format("2006-01-02")
		if def["end_date"] != today || def["start_date"] != time.Now().UTC().AddDate(0, 0, -6).Format("2006-01-02") || def["group_by"] != "day" {
			t.Errorf("defaults: %v", def)
		}
		runCases(t, env, []apiCase{
			{name: "bad start", method: "GET", path: "/admin/usage/stats?start_date=10-03-2026", status: 400, errType: "invalid_request_error",
				fields: map[string]string{"start_date": "YYYY-MM-DD"}},
			{name: "bad end", method: "GET", path: "/admin/usage/stats?end_date=2026-02-30", status: 400, errType: "invalid_request_error",
				fields: map[string]string{"end_date": "YYYY-MM-DD"}},
			{name: "bad group", method: "GET", path: "/admin/usage/stats?group_by=week", status: 400, errType: "invalid_request_error",
				fields: map[string]string{"group_by": "must be one of: hour day provider model key"}},
			{name: "start after end", method: "GET", path: "/admin/usage/stats?start_date=2026-03-12&end_date=2026-03-10", status: 400,
				errType: "invalid_request_error", fields: map[string]string{"start_date": "after end_date"}},
		})
	})
}

// Every write bumps the catalog version the other instances poll.
func TestAdminWritesBumpCatalogVersion(t *testing.T) {
	env := testenv.New(t, "sqlite")
	ctx := context.Background()
	v0, err := env.App.Stores.CatalogVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.MustAdmin(201, "POST", "/admin/projects", map[string]any{"name": "p"})
	env.Admin("POST", "/admin/projects", map[string]any{"name": "p"}) // 409: no bump
	v1, _ := env.App.Stores.CatalogVersion(ctx)
	if v1 != v0+1 {
		t.Fatalf("version %d → %d", v0, v1)
	}
}

// Concurrent admin writes neither fail with "database is locked" on SQLite
// nor lose a catalog version bump on either database.
func TestAdminConcurrentWrites(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		v0, _ := env.App.Stores.CatalogVersion(ctx)
		const n = 20
		errs := make(chan string, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				resp, raw := env.Admin("POST", "/admin/projects", map[string]any{"name": fmt.Sprintf("c%d", i)})
				if resp.StatusCode != 201 {
					errs <- fmt.Sprintf("%d %s", resp.StatusCode, raw)
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		if v1, _ := env.App.Stores.CatalogVersion(ctx); v1 != v0+n {
			t.Fatalf("version %d → %d after %d writes", v0, v1, n)
		}
	})
}
