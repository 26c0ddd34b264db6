package items

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Whatever the body, parseCreate either refuses it with a 422 sentence or
// returns an item within the contract's bounds.
func FuzzParseCreate(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"name":" b ","description":null}`, `{"name":5}`, `[`, `{}`, `{"name":"","description":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		it, err := parseCreate(body)
		if err != nil {
			e := From(err)
			if e.Status != 422 || e.Detail == "" {
				t.Fatalf("error %d %q", e.Status, e.Detail)
			}
			return
		}
		n := utf8.RuneCountInString(it.Name)
		if n < 1 || n > MaxNameLen || it.Name != strings.TrimSpace(it.Name) {
			t.Fatalf("name %q", it.Name)
		}
		if it.Description != nil && utf8.RuneCountInString(*it.Description) > MaxDescriptionLen {
			t.Fatal("description too long")
		}
	})
}
