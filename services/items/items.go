// Package items is the item service of spec/item-service.md: create, list and
// get items with ids 1, 2, 3... in insertion order. Its errors are its own
// type, rendered as {"detail": "<sentence>"}, not the gateway envelope.
package items

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmgw/gateway/models"
)

// Limits of the contract.
const (
	MaxNameLen        = 255
	MaxDescriptionLen = 2000
)

// Error is an item-service error: a status and one readable sentence.
type Error struct {
	Status int
	Detail string
	cause  error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return e.Detail + ": " + e.cause.Error()
	}
	return e.Detail
}

func (e *Error) Unwrap() error { return e.cause }

// Body is the service's error envelope.
func (e *Error) Body() map[string]string { return map[string]string{"detail": e.Detail} }

func unprocessable(detail string) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Detail: detail}
}

// ErrNotFound is the 404 of an unknown item id.
var ErrNotFound = &Error{Status: http.StatusNotFound, Detail: "Item not found"}

// From returns err as an *Error; anything else is a 500.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Detail: "Internal server error", cause: err}
}

// Item is the API shape of an item.
type Item struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// Store is what the service needs from the database.
type Store interface {
	Create(ctx context.Context, it *models.Item) error
	Get(ctx context.Context, id int64) (*models.Item, error)
	List(ctx context.Context) ([]models.Item, error)
}

// Service implements the item operations.
type Service struct{ store Store }

// New builds the service.
func New(store Store) *Service { return &Service{store: store} }

// createBody is decoded with json.RawMessage fields so every wrong type gets
// its own sentence rather than a generic decoder message.
type createBody struct {
	Name        json.RawMessage `json:"name"`
	Description json.RawMessage `json:"description"`
}

// Create validates a raw ItemCreate body and stores the item.
func (s *Service) Create(ctx context.Context, body []byte) (*Item, error) {
	in, err := parseCreate(body)
	if err != nil {
		return nil, err
	}
	if err := s.store.Create(ctx, in); err != nil {
		return nil, err
	}
	return view(in), nil
}

func parseCreate(body []byte) (*models.Item, error) {
	var b createBody
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" || !json.Valid(body) {
		return nil, unprocessable("Request body is not valid JSON.")
	}
	if trimmed[0] != '{' {
		return nil, unprocessable("Request body must be a JSON object.")
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, unprocessable("Request body is not valid JSON.")
	}
	if len(b.Name) == 0 || string(b.Name) == "null" {
		return nil, unprocessable("Field 'name' is required.")
	}
	var name string
	if err := json.Unmarshal(b.Name, &name); err != nil {
		return nil, unprocessable("Field 'name' must be a string.")
	}
	name = strings.TrimSpace(name)
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return nil, unprocessable("Field 'name' must not be empty.")
	case n > MaxNameLen:
		return nil, unprocessable(fmt.Sprintf("Field 'name' must be at most %d characters.", MaxNameLen))
	}
	it := &models.Item{Name: name}
	if len(b.Description) > 0 && string(b.Description) != "null" {
		var d string
		if err := json.Unmarshal(b.Description, &d); err != nil {
			return nil, unprocessable("Field 'description' must be a string or null.")
		}
		if utf8.RuneCountInString(d) > MaxDescriptionLen {
			return nil, unprocessable(fmt.Sprintf("Field 'description' must be at most %d characters.", MaxDescriptionLen))
		}
		it.Description = &d
	}
	return it, nil
}

// Get reads one item; rawID is the path segment.
func (s *Service) Get(ctx context.Context, rawID string) (*Item, error) {
	id, err := strconv.ParseInt(rawID, 10, 64)
	if err != nil {
		return nil, unprocessable("Path parameter 'item_id' must be an integer.")
	}
	it, err := s.store.Get(ctx, id)
	if errors.Is(err, models.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return view(it), nil
}

// List returns every item by id ascending.
func (s *Service) List(ctx context.Context) ([]Item, error) {
	rows, err := s.store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Item, len(rows))
	for i := range rows {
		out[i] = *view(&rows[i])
	}
	return out, nil
}

func view(it *models.Item) *Item {
	return &Item{ID: it.ID, Name: it.Name, Description: it.Description}
}
