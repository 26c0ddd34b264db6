package handlers

import (
	"testing"

	"github.com/llmgw/gateway/services/admin"
	"github.com/llmgw/gateway/services/apierr"
)

func TestDecodeJSON(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type body struct {
		Name  string  `json:"name"`
		Count *int    `json:"count"`
		Rate  float64 `json:"rate"`
		On    bool    `json:"on"`
		List  []string
		Inner inner `json:"inner"`
	}
	cases := []struct {
		raw, field, reason, msg string
	}{
		{`{"name":1}`, "name", "must be a string", ""},
		{`{"count":"1"}`, "count", "must be an integer", ""},
		{`{"count":1.5}`, "count", "must be an integer", ""},
		{`{"rate":"x"}`, "rate", "must be a number", ""},
		{`{"on":1}`, "on", "must be a boolean", ""},
		{`{"List":{}}`, "List", "must be an array", ""},
		{`{"inner":{"n":"x"}}`, "inner.n", "must be an integer", ""},
		{`{"inner":[]}`, "inner", "must be an object", ""},
		{`{`, "", "", "Request body is not valid JSON."},
		{``, "", "", "Request body is not valid JSON."},
		{`"x"`, "", "", "Request body must be a JSON object."},
	}
	for _, tc := range cases {
		var b body
		err := decodeJSON([]byte(tc.raw), &b)
		e := apierr.From(err)
		if err == nil || e.Status != 400 || e.Type != apierr.TypeInvalidRequest {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		if tc.msg != "" && e.Message != tc.msg {
			t.Errorf("%s: message %q", tc.raw, e.Message)
		}
		if tc.field != "" {
			fields, _ := e.Details["fields"].([]apierr.FieldError)
			if len(fields) != 1 || fields[0].Field != tc.field || fields[0].Reason != tc.reason {
				t.Errorf("%s: fields %+v", tc.raw, fields)
			}
		}
	}
	var ok body
	if err := decodeJSON([]byte(`{"name":"x","count":2}`), &ok); err != nil || ok.Name != "x" || *ok.Count != 2 {
		t.Fatalf("%v %+v", err, ok)
	}
}

// Decoding any body into the admin inputs never panics and fails only with
// a 400 invalid_request_error.
func FuzzDecodeAdminInputs(f *testing.F) {
	for _, s := range []string{`{"name":"x","api_base":"https://x"}`, `{"routing_config":{"targets":[{"weight":1}]}}`, `{"rpm_limit":1e99}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dst := range []any{&admin.ProviderInput{}, &admin.ProjectInput{}, &admin.KeyInput{}, &admin.AliasInput{}} {
			if err := decodeJSON(body, dst); err != nil {
				if e := apierr.From(err); e.Status != 400 || e.Type != apierr.TypeInvalidRequest {
					t.Fatalf("%T: %v", dst, err)
				}
			}
		}
	})
}
