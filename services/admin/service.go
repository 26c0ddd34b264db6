// Package admin is the business logic of the admin API: create, read, list,
// update and delete providers, projects, virtual keys and model aliases, and
// usage statistics. It knows nothing of HTTP frameworks: handlers decode a
// request into the input types here, call a method and render the result or
// the *apierr.Error it returns.
package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/secret"
	"github.com/llmgw/gateway/services/validate"
)

// SpendSource reports the spend of a key or project in its current budget
// period. The budget engine implements it (it also counts open reservations
// and unflushed usage); without one the service sums stored usage.
type SpendSource interface {
	// scope is "key" or "project"; period is daily|weekly|monthly|total.
	CurrentSpend(ctx context.Context, scope, id, period string) (float64, error)
}

// Options builds a Service.
type Options struct {
	Stores *models.Stores
	Box    *secret.Box // seals provider api keys
	// Spend reports current spend; nil = sum of stored usage since the period start.
	Spend SpendSource
	// OnChange runs after every successful write (reload the in-memory catalog); may be nil.
	OnChange func()
	// Now is the clock (tests); nil = time.Now.
	Now func() time.Time
}

// Service implements the admin API.
type Service struct {
	st       *models.Stores
	box      *secret.Box
	spend    SpendSource
	onChange func()
	now      func() time.Time
}

// New builds the service.
func New(o Options) *Service {
	s := &Service{st: o.Stores, box: o.Box, spend: o.Spend, onChange: o.OnChange, now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if s.spend == nil {
		s.spend = storedSpend{usage: o.Stores.Usage, now: func() time.Time { return s.now() }}
	}
	return s
}

func (s *Service) changed() {
	if s.onChange != nil {
		s.onChange()
	}
}

// Deleted is the body of every successful delete.
type Deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// List is the envelope of every list.
type List[T any] struct {
	Data     []T   `json:"data"`
	Total    int64 `json:"total"`
	Page     int   `json:"page"`
	PageSize int   `json:"page_size"`
}

// newList renders one page of rows through view.
func newList[M, V any](rows []M, total int64, page models.Page, view func(*M) (V, error)) (*List[V], error) {
	out := &List[V]{Data: make([]V, 0, len(rows)), Total: total, Page: page.Page, PageSize: page.PageSize}
	for i := range rows {
		v, err := view(&rows[i])
		if err != nil {
			return nil, err
		}
		out.Data = append(out.Data, v)
	}
	return out, nil
}

// ListParams are the raw query parameters of a list; the service parses and
// checks them so every list answers the same 400s.
type ListParams struct {
	Page      string
	PageSize  string
	Enabled   string // providers, keys, aliases
	ProjectID string // keys
}

const (
	defaultPageSize = 20
	maxPageSize     = 100
)

func parsePage(p ListParams) (models.Page, []apierr.FieldError) {
	var fields []apierr.FieldError
	page, size := 1, defaultPageSize
	if p.Page != "" {
		n, err := strconv.Atoi(p.Page)
		switch {
		case err != nil:
			fields = append(fields, apierr.FieldError{Field: "page", Reason: "must be an integer"})
		case n < 1:
			fields = append(fields, apierr.FieldError{Field: "page", Reason: "must be >= 1"})
		default:
			page = n
		}
	}
	if p.PageSize != "" {
		n, err := strconv.Atoi(p.PageSize)
		switch {
		case err != nil:
			fields = append(fields, apierr.FieldError{Field: "page_size", Reason: "must be an integer"})
		case n < 1:
			fields = append(fields, apierr.FieldError{Field: "page_size", Reason: "must be >= 1"})
		case n > maxPageSize:
			fields = append(fields, apierr.FieldError{Field: "page_size", Reason: fmt.Sprintf("must be <= %d", maxPageSize)})
		default:
			size = n
		}
	}
	return models.Page{Page: page, PageSize: size}, fields
}

func parseEnabled(raw string) (*bool, []apierr.FieldError) {
	if raw == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(strings.ToLower(raw))
	if err != nil {
		return nil, []apierr.FieldError{{Field: "enabled", Reason: "must be a boolean (true or false)"}}
	}
	return &b, nil
}

// storeErr maps store sentinels to client errors; what names the resource
// ("provider") and label its identifying value for messages.
func storeErr(err error, what, label string) error {
	var inUse *models.InUseError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, models.ErrNotFound):
		return apierr.NotFound(fmt.Sprintf("No %s with id '%s'.", what, label))
	case errors.Is(err, models.ErrDuplicate):
		return apierr.Conflict(fmt.Sprintf("A %s named '%s' already exists.", what, label))
	case errors.As(err, &inUse):
		return apierr.Conflict(fmt.Sprintf("The %s '%s' is still used by %s: %s; change or delete them first.",
			what, label, inUse.What, strings.Join(inUse.Names, ", ")))
	case errors.Is(err, models.ErrNoProject):
		return validate.Invalid(apierr.FieldError{Field: "project_id", Reason: "must name an existing project"})
	}
	var mp *models.MissingProvidersError
	if errors.As(err, &mp) {
		return validate.Invalid(apierr.FieldError{Field: "provider", Reason: "must name an existing provider (unknown: " + strings.Join(mp.Names, ", ") + ")"})
	}
	return err
}

func newID() string { return uuidString() }

// utc is how every stored and returned timestamp is normalised: UTC, to the
// microsecond, the finest PostgreSQL keeps, so that what a create or update
// returns is what later reads return on either database.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func ptrUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}

func isNotFound(err error) bool  { return errors.Is(err, models.ErrNotFound) }
func isDuplicate(err error) bool { return errors.Is(err, models.ErrDuplicate) }
