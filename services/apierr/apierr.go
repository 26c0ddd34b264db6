// Package apierr is the gateway's one error type. Every error that reaches a
// client is an *Error, rendered in one place as
// {"detail":{"error":{"type","message","details"}}}; anything else becomes 500
// internal_error.
package apierr

import (
	"errors"
	"fmt"
	"net/http"
)

// Type is the contract's error.type.
type Type string

const (
	TypeInvalidRequest Type = "invalid_request_error"
	TypeAuthentication Type = "authentication_error"
	TypeBudgetExceeded Type = "budget_exceeded_error"
	TypePermission     Type = "permission_error"
	TypeNotFound       Type = "not_found_error"
	TypeConflict       Type = "conflict_error"
	TypeRateLimit      Type = "rate_limit_error"
	TypeProvider       Type = "provider_error"
	TypeUnavailable    Type = "service_unavailable"
	TypeTimeout        Type = "timeout_error"
	TypeInternal       Type = "internal_error"
)

// FieldError names one invalid field of a request body or query.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Error is an error a client sees.
type Error struct {
	Status  int
	Type    Type
	Message string
	Details map[string]any
	// Headers are added to the response (Retry-After, X-RateLimit-*).
	Headers map[string]string
	cause   error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Type, e.Message, e.cause)
	}
	return string(e.Type) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.cause }

// WithCause records the underlying error for logs; it is never rendered.
func (e *Error) WithCause(err error) *Error { e.cause = err; return e }

// WithHeader adds a response header.
func (e *Error) WithHeader(k, v string) *Error {
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	e.Headers[k] = v
	return e
}

// Body is the contract's error envelope.
func (e *Error) Body() map[string]any {
	d := e.Details
	if d == nil {
		d = map[string]any{}
	}
	return map[string]any{"detail": map[string]any{"error": map[string]any{
		"type": e.Type, "message": e.Message, "details": d,
	}}}
}

func newErr(status int, t Type, msg string, details map[string]any) *Error {
	return &Error{Status: status, Type: t, Message: msg, Details: details}
}

// InvalidRequest is a 400; fields, when given, go to details.fields.
func InvalidRequest(msg string, fields ...FieldError) *Error {
	var d map[string]any
	if len(fields) > 0 {
		d = map[string]any{"fields": fields}
	}
	return newErr(http.StatusBadRequest, TypeInvalidRequest, msg, d)
}

// InvalidRequestStatus is an invalid_request_error with another status
// (an upstream 4xx passed through, 405, 413).
func InvalidRequestStatus(status int, msg string, details map[string]any) *Error {
	return newErr(status, TypeInvalidRequest, msg, details)
}

func Authentication(msg string) *Error {
	return newErr(http.StatusUnauthorized, TypeAuthentication, msg, nil)
}
func Permission(msg string) *Error { return newErr(http.StatusForbidden, TypePermission, msg, nil) }
func NotFound(msg string) *Error   { return newErr(http.StatusNotFound, TypeNotFound, msg, nil) }
func Conflict(msg string) *Error   { return newErr(http.StatusConflict, TypeConflict, msg, nil) }
func BudgetExceeded(msg string, details map[string]any) *Error {
	return newErr(http.StatusPaymentRequired, TypeBudgetExceeded, msg, details)
}
func RateLimit(msg string, details map[string]any) *Error {
	return newErr(http.StatusTooManyRequests, TypeRateLimit, msg, details)
}
func Provider(msg string, details map[string]any) *Error {
	return newErr(http.StatusBadGateway, TypeProvider, msg, details)
}
func Unavailable(msg string, details map[string]any) *Error {
	return newErr(http.StatusServiceUnavailable, TypeUnavailable, msg, details)
}
func Timeout(msg string, details map[string]any) *Error {
	return newErr(http.StatusGatewayTimeout, TypeTimeout, msg, details)
}
func Internal(msg string) *Error {
	return newErr(http.StatusInternalServerError, TypeInternal, msg, nil)
}

// From returns err as an *Error; any other error becomes 500 internal_error
// (with err kept as the cause for the log).
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal("The server hit an unexpected error.").WithCause(err)
}
