package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/middleware"
	"github.com/llmgw/gateway/services/apierr"
)

// readBody reads the whole body; a body over the limit is a 413.
func readBody(c *gin.Context) ([]byte, error) {
	if c.Request.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, middleware.TooLarge(mbe.Limit)
		}
		return nil, apierr.InvalidRequest("The request body could not be read.").WithCause(err)
	}
	return b, nil
}

// bindJSON decodes the JSON object body into dst. Malformed JSON and wrong
// types are 400 invalid_request_error, the latter naming the field.
func bindJSON(c *gin.Context, dst any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeJSON(body, dst)
}

func decodeJSON(body []byte, dst any) error {
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" || !json.Valid(body) {
		return apierr.InvalidRequest("Request body is not valid JSON.")
	}
	if trimmed[0] != '{' {
		return apierr.InvalidRequest("Request body must be a JSON object.")
	}
	if err := json.Unmarshal(body, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			reason := "must be " + jsonKind(te.Type)
			return apierr.InvalidRequest("Invalid request: "+te.Field+" "+reason+".",
				apierr.FieldError{Field: te.Field, Reason: reason})
		}
		return apierr.InvalidRequest("Request body is not valid JSON.").WithCause(err)
	}
	return nil
}

// jsonKind names the JSON type a Go type expects, for "must be ..." reasons.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of another type"
}
