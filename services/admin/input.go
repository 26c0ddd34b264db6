package admin

import (
	"encoding/json"
	"strings"

	"github.com/llmgw/gateway/services/apierr"
)

// present records which top-level keys a JSON body carried, so a partial
// update tells "absent" (keep) from null (clear) from a value (set).
type present map[string]bool

// Has reports whether the body carried key (null included).
func (p present) Has(key string) bool { return p[key] }

// decodeTracked unmarshals b into dst (a pointer to a struct without its own
// UnmarshalJSON) and records the keys b carried.
func decodeTracked(b []byte, dst any, p *present) error {
	if err := json.Unmarshal(b, dst); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	*p = make(present, len(keys))
	for k := range keys {
		(*p)[k] = true
	}
	return nil
}

// fieldCheck accumulates field errors in order.
type fieldCheck []apierr.FieldError

func (f *fieldCheck) add(field, reason string) {
	*f = append(*f, apierr.FieldError{Field: field, Reason: reason})
}

// required: on create the key must be present with a value.
func (f *fieldCheck) required(p present, key string, isNil bool) {
	if !p.Has(key) || isNil {
		f.add(key, "is required")
	}
}

// notNull: a present key of a non-nullable field must carry a value.
func (f *fieldCheck) notNull(p present, key string, isNil bool) {
	if p.Has(key) && isNil {
		f.add(key, "must not be null")
	}
}

func trimPtr(s *string) {
	if s != nil {
		*s = strings.TrimSpace(*s)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
