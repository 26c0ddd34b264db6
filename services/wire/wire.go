// Package wire holds the JSON helpers the client wire formats (chat,
// messages, responses) share: optional fields that never fail a decode so
// validation can name every bad field, the field-error collector, a
// one-pass scan for uninterpreted top-level fields, and id helpers.
package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmgw/gateway/services/apierr"
)

// OptString is an optional JSON string that never fails the decode: a value
// of the wrong type sets Bad so validation can report every bad field, not
// only the first one encoding/json would return. null counts as absent.
type OptString struct {
	Set, Bad bool
	V        string
}

func (o *OptString) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case 'n':
		return nil
	case '"':
		o.Set = true
		if bytes.IndexByte(b, '\\') < 0 {
			o.V = string(b[1 : len(b)-1]) // no escapes: skip a second scan
			return nil
		}
		return json.Unmarshal(b, &o.V)
	}
	o.Set, o.Bad = true, true
	return nil
}

// OptNumber is an optional JSON number (see OptString).
type OptNumber struct {
	Set, Bad bool
	V        float64
}

func (o *OptNumber) UnmarshalJSON(b []byte) error {
	if b[0] == 'n' {
		return nil
	}
	o.Set = true
	if b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		o.Bad = true
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		o.Bad = true // out of float64 range
	}
	o.V = v
	return nil
}

// OptBool is an optional JSON boolean (see OptString).
type OptBool struct {
	Set, Bad bool
	V        bool
}

func (o *OptBool) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case 'n':
		return nil
	case 't':
		o.Set, o.V = true, true
	case 'f':
		o.Set = true
	default:
		o.Set, o.Bad = true, true
	}
	return nil
}

// Content is a message's content: a string or an array of parts (chat) or
// blocks (messages). Like the Opt* fields it never fails the decode: a
// value of another type, or an array whose elements do not fit T, sets Bad.
type Content[T any] struct {
	Set, Bad bool
	IsString bool
	Text     string
	Parts    []T
}

func (c *Content[T]) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case 'n':
		return nil
	case '"':
		c.Set, c.IsString = true, true
		var s OptString
		_ = s.UnmarshalJSON(b)
		c.Text = s.V
		return nil
	case '[':
		c.Set = true
		if err := json.Unmarshal(b, &c.Parts); err != nil {
			c.Bad = true
		}
		return nil
	}
	c.Set, c.Bad = true, true
	return nil
}

// IsNull reports whether raw is absent or the JSON literal null.
func IsNull(raw json.RawMessage) bool { return len(raw) == 0 || raw[0] == 'n' }

// FieldErrs collects validation failures in body order.
type FieldErrs []apierr.FieldError

func (e *FieldErrs) Add(field, reason string) {
	*e = append(*e, apierr.FieldError{Field: field, Reason: reason})
}

// Unmarshal decodes a request body into w, a struct of Opt* fields. Broken
// JSON or a body that is not an object is the whole request's error. A wrong
// type inside a field is not: the Opt* fields record their own, and
// typeErr = true tells the caller that a typed field (an array of objects)
// failed and must be searched for the culprit.
func Unmarshal(body []byte, w any) (typeErr bool, err error) {
	err = json.Unmarshal(body, w)
	if err == nil {
		return false, nil
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return false, apierr.InvalidRequest("Request body is not valid JSON.")
	}
	if te.Field == "" {
		return false, apierr.InvalidRequest("Request body must be a JSON object.")
	}
	return true, nil
}

// Model validates the required, non-empty model field and returns it.
func (e *FieldErrs) Model(o OptString) string {
	switch {
	case !o.Set:
		e.Add("model", "is required")
	case o.Bad:
		e.Add("model", "must be a string")
	case o.V == "":
		e.Add("model", "must not be empty")
	}
	return o.V
}

// err renders the collected failures as one 400, or nil.
func (e FieldErrs) Err() error {
	if len(e) == 0 {
		return nil
	}
	msg := "Invalid request: " + e[0].Field + " " + e[0].Reason + "."
	if len(e) > 1 {
		msg = "Invalid request: " + e[0].Field + " " + e[0].Reason + " (and " + strconv.Itoa(len(e)-1) + " more invalid fields)."
	}
	return apierr.InvalidRequest(msg, e...)
}

// number validates an optional number against [lo, hi].
func (e *FieldErrs) Number(field string, o OptNumber, lo, hi float64) *float64 {
	if !o.Set {
		return nil
	}
	switch {
	case o.Bad:
		e.Add(field, "must be a number")
	case o.V < lo:
		e.Add(field, "must be >= "+strconv.FormatFloat(lo, 'g', -1, 64))
	case o.V > hi:
		e.Add(field, "must be <= "+strconv.FormatFloat(hi, 'g', -1, 64))
	default:
		v := o.V
		return &v
	}
	return nil
}

// integer validates an optional integer >= lo.
func (e *FieldErrs) Integer(field string, o OptNumber, lo int) *int {
	if !o.Set {
		return nil
	}
	switch {
	case o.Bad || o.V != float64(int64(o.V)) || o.V > 1<<53:
		e.Add(field, "must be an integer")
	case o.V < float64(lo):
		e.Add(field, "must be >= "+strconv.Itoa(lo))
	default:
		v := int(o.V)
		return &v
	}
	return nil
}

// TypeReason turns a type mismatch from a nested decode into a reason.
func TypeReason(err error) (path, reason string) {
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok {
		return "", "is invalid"
	}
	switch te.Type.Kind() {
	case reflect.Struct, reflect.Map:
		reason = "must be an object"
	case reflect.Slice, reflect.Array:
		reason = "must be an array"
	case reflect.String:
		reason = "must be a string"
	case reflect.Bool:
		reason = "must be a boolean"
	default:
		reason = "must be a number"
	}
	return te.Field, reason
}

// decodeElem decodes one array element into v, reporting a type mismatch at
// path (plus the nested field encoding/json names).
func (e *FieldErrs) DecodeElem(path string, raw []byte, v any) bool {
	if err := json.Unmarshal(raw, v); err != nil {
		sub, reason := TypeReason(err)
		if sub != "" {
			path += "." + sub
		}
		e.Add(path, reason)
		return false
	}
	return true
}

// Extras returns the top-level fields of a valid JSON object body whose keys
// known does not claim, with their raw values (copied). It walks the bytes
// once instead of decoding the body a second time into a map.
func Extras(body []byte, known func(string) bool) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipWS(body, i)
		if i >= len(body) || body[i] != '"' {
			return out
		}
		ks := i
		i = skipString(body, i)
		ke := i
		key := body[ks+1 : ke-1]
		i = skipWS(body, i) + 1 // ':'
		i = skipWS(body, i)
		vs := i
		i = skipValue(body, i)
		if !known(string(key)) {
			k := string(key)
			if bytes.IndexByte(key, '\\') >= 0 {
				_ = json.Unmarshal(body[ks:ke], &k) // escaped key: decode it properly
			}
			if !known(k) {
				if out == nil {
					out = make(map[string]json.RawMessage, 4)
				}
				out[k] = append(json.RawMessage(nil), body[vs:i]...)
			}
		}
		i = skipWS(body, i)
		if i >= len(body) || body[i] != ',' {
			return out
		}
		i++
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
// It jumps from quote to quote (IndexByte is vectorised) and treats a quote
// as closing when an even number of backslashes precede it.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		n := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// NewID returns prefix plus 26 random base32 characters.
func NewID(prefix string) string { return prefix + rand.Text() }

// WithPrefix keeps an upstream id (useful to correlate with provider logs)
// but gives it the prefix clients of this format expect.
func WithPrefix(prefix, id string) string {
	if id == "" {
		return NewID(prefix)
	}
	if strings.HasPrefix(id, prefix) {
		return id
	}
	return prefix + id
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. Stream frames are built by hand
// from precomputed prefixes (one append per token, no reflection); this is
// the one piece of JSON encoding they need. Invalid UTF-8 becomes U+FFFD and
// U+2028/U+2029 are escaped, as encoding/json does.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// List is an optional JSON array decoded in one pass. When the array or an
// element has the wrong shape, it keeps the raw bytes instead, so that
// validation can decode element by element and name each bad one; the
// common, valid body pays for one decode only.
type List[T any] struct {
	Set bool
	V   []T
	Raw json.RawMessage // set only when the one-pass decode failed
}

func (l *List[T]) UnmarshalJSON(b []byte) error {
	if b[0] == 'n' {
		return nil
	}
	l.Set = true
	if b[0] == '[' && json.Unmarshal(b, &l.V) == nil {
		return nil
	}
	l.V = nil
	l.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// each calls fn for every element that decoded, with its path.
func (l *List[T]) Each(path string, errs *FieldErrs, fn func(p string, v *T)) {
	if l.Raw == nil {
		for i := range l.V {
			fn(path+"["+strconv.Itoa(i)+"]", &l.V[i])
		}
		return
	}
	var elems []json.RawMessage
	if l.Raw[0] != '[' || json.Unmarshal(l.Raw, &elems) != nil {
		errs.Add(path, "must be an array")
		return
	}
	for i, el := range elems {
		p := path + "[" + strconv.Itoa(i) + "]"
		var v T
		if errs.DecodeElem(p, el, &v) {
			fn(p, &v)
		}
	}
}
