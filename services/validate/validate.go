// Package validate runs go-playground/validator on request structs and turns
// its errors into the contract's details.fields entries: the field's JSON
// path and a readable reason ("is required", "must be <= 100").
package validate

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/go-playground/validator/v10"

	"github.com/llmgw/gateway/services/apierr"
)

var (
	once sync.Once
	v    *validator.Validate
)

// Validator returns the shared validator, configured to name fields by their
// json tag so errors speak the client's language.
func Validator() *validator.Validate {
	once.Do(func() {
		v = validator.New(validator.WithRequiredStructEnabled())
		v.RegisterTagNameFunc(func(f reflect.StructField) string {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				return ""
			}
			if name == "" {
				return f.Name
			}
			return name
		})
	})
	return v
}

// Struct validates s and returns one FieldError per failed rule, nil when
// s is valid.
func Struct(s any) []apierr.FieldError {
	err := Validator().Struct(s)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return []apierr.FieldError{{Field: "", Reason: err.Error()}}
	}
	out := make([]apierr.FieldError, 0, len(verrs))
	for _, fe := range verrs {
		out = append(out, apierr.FieldError{Field: fieldPath(fe.Namespace()), Reason: Reason(fe)})
	}
	return out
}

// fieldPath drops the struct type from a namespace:
// "AliasInput.routing_config.targets[0].weight" → "routing_config.targets[0].weight".
func fieldPath(ns string) string {
	if _, rest, ok := strings.Cut(ns, "."); ok {
		return rest
	}
	return ns
}

// Reason renders one validator failure as a readable phrase.
func Reason(fe validator.FieldError) string {
	p := fe.Param()
	isString := fe.Kind() == reflect.String
	isList := fe.Kind() == reflect.Slice || fe.Kind() == reflect.Array || fe.Kind() == reflect.Map
	switch fe.Tag() {
	case "required", "required_if", "required_unless", "required_with":
		return "is required"
	case "min", "gte":
		switch {
		case isString && p == "1":
			return "must not be empty"
		case isString:
			return fmt.Sprintf("must be at least %s characters", p)
		case isList:
			return fmt.Sprintf("must have at least %s entries", p)
		}
		return "must be >= " + p
	case "max", "lte":
		switch {
		case isString:
			return fmt.Sprintf("must be at most %s characters", p)
		case isList:
			return fmt.Sprintf("must have at most %s entries", p)
		}
		return "must be <= " + p
	case "gt":
		return "must be > " + p
	case "lt":
		return "must be < " + p
	case "len":
		return "must have length " + p
	case "oneof":
		return "must be one of: " + p
	case "url", "http_url":
		return "must be an http(s) URL"
	case "uuid", "uuid4":
		return "must be a UUID"
	case "notblank":
		return "must not be empty"
	case "dive":
		return "is invalid"
	}
	return "is invalid (" + fe.Tag() + ")"
}

// Fields is a convenience to build the 400 of a failed validation.
func Fields(fields []apierr.FieldError) error {
	if len(fields) == 0 {
		return nil
	}
	return Invalid(fields...)
}

// Invalid is the 400 invalid_request_error naming every bad field.
func Invalid(fields ...apierr.FieldError) *apierr.Error {
	names := make([]string, 0, len(fields))
	seen := map[string]bool{}
	for _, f := range fields {
		if !seen[f.Field] {
			seen[f.Field] = true
			names = append(names, f.Field)
		}
	}
	msg := "Invalid request: "
	if len(fields) == 1 {
		msg += fields[0].Field + " " + fields[0].Reason + "."
	} else {
		msg += "invalid fields " + strings.Join(names, ", ") + "."
	}
	return apierr.InvalidRequest(msg, fields...)
}
