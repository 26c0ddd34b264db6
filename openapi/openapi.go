// Package openapi embeds the gateway's hand-written OpenAPI 3.0.3 document
// (openapi.json) and serves it. Paths lists the documented operations so a
// test can hold the document and the router's routes to each other.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
)

//go:embed openapi.json
var document []byte

// Document returns a copy of the embedded OpenAPI document (JSON).
func Document() []byte { return bytes.Clone(document) }

// Handler serves the document as application/json (for GET and HEAD).
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(document)
	})
}

// operationMethods are the keys of an OpenAPI path item that are operations.
var operationMethods = map[string]bool{
	"get": true, "put": true, "post": true, "delete": true,
	"options": true, "head": true, "patch": true, "trace": true,
}

// Paths returns every documented path (OpenAPI `{param}` syntax) mapped to
// its operations' methods, upper-case and sorted. It returns an empty map
// if the embedded document does not parse (the package test rules that out).
func Paths() map[string][]string {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	out := map[string][]string{}
	if err := json.Unmarshal(document, &doc); err != nil {
		return out
	}
	for path, item := range doc.Paths {
		var methods []string
		for k := range item {
			if operationMethods[k] {
				methods = append(methods, strings.ToUpper(k))
			}
		}
		sort.Strings(methods)
		out[path] = methods
	}
	return out
}
