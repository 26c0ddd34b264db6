package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func parse(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(Document(), &doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	return doc
}

func TestVersionAndInfo(t *testing.T) {
	doc := parse(t)
	if doc["openapi"] != "3.0.3" {
		t.Fatalf("openapi = %v, want 3.0.3", doc["openapi"])
	}
	info, _ := doc["info"].(map[string]any)
	if info["title"] == nil || info["version"] == nil {
		t.Fatalf("info needs title and version: %v", info)
	}
}

func TestEveryOperationHasResponses(t *testing.T) {
	doc := parse(t)
	paths, _ := doc["paths"].(map[string]any)
	if len(paths) == 0 {
		t.Fatal("no paths")
	}
	ids := map[string]string{}
	for p, v := range paths {
		item := v.(map[string]any)
		for m, o := range item {
			if !operationMethods[m] {
				continue
			}
			op := o.(map[string]any)
			if rs, _ := op["responses"].(map[string]any); len(rs) == 0 {
				t.Errorf("%s %s has no responses", strings.ToUpper(m), p)
			}
			id, _ := op["operationId"].(string)
			if id == "" {
				t.Errorf("%s %s has no operationId", strings.ToUpper(m), p)
			} else if prev, dup := ids[id]; dup {
				t.Errorf("operationId %q used by %s and %s %s", id, prev, strings.ToUpper(m), p)
			}
			ids[id] = strings.ToUpper(m) + " " + p
			if _, ok := op["security"]; !ok {
				t.Errorf("%s %s does not state its security", strings.ToUpper(m), p)
			}
		}
	}
}

// TestRefsResolve walks the whole document and resolves every $ref against
// it (local JSON pointers only).
func TestRefsResolve(t *testing.T) {
	doc := parse(t)
	n := 0
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["$ref"]; ok {
				n++
				s, _ := r.(string)
				if !strings.HasPrefix(s, "#/components/") {
					t.Errorf("%s: $ref %q does not point into components", at, s)
				} else if resolve(doc, s) == nil {
					t.Errorf("%s: $ref %q does not resolve", at, s)
				}
			}
			for k, e := range x {
				walk(e, at+"/"+k)
			}
		case []any:
			for _, e := range x {
				walk(e, at+"/[]")
			}
		}
	}
	walk(doc, "#")
	if n == 0 {
		t.Fatal("no $ref found")
	}
}

func resolve(doc map[string]any, ref string) any {
	var cur any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[part]; !ok {
			return nil
		}
	}
	return cur
}

// TestPathParamsDeclared checks that every {param} of a path template is
// declared as a path parameter (directly or through a $ref).
func TestPathParamsDeclared(t *testing.T) {
	doc := parse(t)
	tmpl := regexp.MustCompile(`\{([^}]+)\}`)
	for p, v := range doc["paths"].(map[string]any) {
		item := v.(map[string]any)
		declared := map[string]bool{}
		addParams := func(list any) {
			ps, _ := list.([]any)
			for _, e := range ps {
				pm, _ := e.(map[string]any)
				if r, ok := pm["$ref"].(string); ok {
					pm, _ = resolve(doc, r).(map[string]any)
				}
				if pm["in"] == "path" {
					declared[pm["name"].(string)] = true
				}
			}
		}
		addParams(item["parameters"])
		for m, o := range item {
			if operationMethods[m] {
				addParams(o.(map[string]any)["parameters"])
			}
		}
		for _, mm := range tmpl.FindAllStringSubmatch(p, -1) {
			if !declared[mm[1]] {
				t.Errorf("%s: path parameter %q not declared", p, mm[1])
			}
		}
	}
}

func TestSecuritySchemesExist(t *testing.T) {
	doc := parse(t)
	comps := doc["components"].(map[string]any)
	schemes, _ := comps["securitySchemes"].(map[string]any)
	for _, s := range []string{"bearerAuth", "apiKeyAuth"} {
		if schemes[s] == nil {
			t.Errorf("security scheme %s missing", s)
		}
	}
	for p, v := range doc["paths"].(map[string]any) {
		for m, o := range v.(map[string]any) {
			if !operationMethods[m] {
				continue
			}
			reqs, _ := o.(map[string]any)["security"].([]any)
			for _, r := range reqs {
				for name := range r.(map[string]any) {
					if schemes[name] == nil {
						t.Errorf("%s %s: unknown security scheme %q", m, p, name)
					}
				}
			}
			public := p == "/health" || p == "/metrics" || p == "/openapi.json" || strings.HasPrefix(p, "/items")
			if public != (len(reqs) == 0) {
				t.Errorf("%s %s: security %v, public=%v", m, p, reqs, public)
			}
		}
	}
}

func TestPaths(t *testing.T) {
	want := map[string][]string{
		"/health":                          {"GET"},
		"/metrics":                         {"GET"},
		"/openapi.json":                    {"GET"},
		"/v1/chat/completions":             {"POST"},
		"/v1/messages":                     {"POST"},
		"/v1/responses":                    {"POST"},
		"/v1/models":                       {"GET"},
		"/admin/providers":                 {"GET", "POST"},
		"/admin/providers/{provider_id}":   {"DELETE", "GET", "PUT"},
		"/admin/projects":                  {"GET", "POST"},
		"/admin/projects/{project_id}":     {"DELETE", "GET", "PUT"},
		"/admin/keys":                      {"GET", "POST"},
		"/admin/keys/{key_id}":             {"DELETE", "GET", "PUT"},
		"/admin/models/aliases":            {"GET", "POST"},
		"/admin/models/aliases/{alias_id}": {"DELETE", "GET", "PUT"},
		"/admin/usage/stats":               {"GET"},
		"/items":                           {"GET", "POST"},
		"/items/{item_id}":                 {"GET"},
	}
	got := Paths()
	if !reflect.DeepEqual(got, want) {
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Fatalf("Paths() = %v (paths %v), want %v", got, keys, want)
	}
	got["/health"][0] = "X"
	if Paths()["/health"][0] != "GET" {
		t.Fatal("Paths must return a fresh map")
	}
}

func TestDocumentIsACopy(t *testing.T) {
	d := Document()
	d[0] = 'X'
	if Document()[0] != '{' {
		t.Fatal("Document must return a copy")
	}
}

func TestHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
	if rec.Body.String() != string(Document()) {
		t.Fatal("body differs from Document()")
	}
}
