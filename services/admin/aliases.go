package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/validate"
)

// Routing types.
const (
	RoutingSimple      = "simple"
	RoutingLoadBalance = "load_balance"
	RoutingFallback    = "fallback"
)

// TargetInput is one entry of routing_config.targets or .chain.
type TargetInput struct {
	Provider string   `json:"provider" validate:"max=255"`
	Model    string   `json:"model" validate:"max=255"`
	Weight   *float64 `json:"weight"`
}

// RoutingConfigInput is routing_config.
type RoutingConfigInput struct {
	Targets []TargetInput `json:"targets" validate:"max=100,dive"`
	Chain   []TargetInput `json:"chain" validate:"max=100,dive"`
}

// AliasInput is the body of POST and PUT /admin/models/aliases.
type AliasInput struct {
	Alias            *string             `json:"alias" validate:"omitnil,min=1,max=255"`
	Provider         *string             `json:"provider" validate:"omitnil,max=255"`
	Model            *string             `json:"model" validate:"omitnil,max=255"`
	Enabled          *bool               `json:"enabled"`
	RoutingType      *string             `json:"routing_type" validate:"omitnil,oneof=simple load_balance fallback"`
	RoutingConfig    *RoutingConfigInput `json:"routing_config"`
	InputPricePer1K  *float64            `json:"input_price_per_1k" validate:"omitnil,gte=0"`
	OutputPricePer1K *float64            `json:"output_price_per_1k" validate:"omitnil,gte=0"`
	present          present
}

// UnmarshalJSON records which fields the body carried.
func (in *AliasInput) UnmarshalJSON(b []byte) error {
	type plain AliasInput
	return decodeTracked(b, (*plain)(in), &in.present)
}

// Alias is an alias as the API returns it.
type Alias struct {
	ID               string                `json:"id"`
	Alias            string                `json:"alias"`
	Provider         string                `json:"provider"`
	Model            string                `json:"model"`
	Enabled          bool                  `json:"enabled"`
	RoutingType      string                `json:"routing_type"`
	RoutingConfig    *models.RoutingConfig `json:"routing_config"`
	InputPricePer1K  float64               `json:"input_price_per_1k"`
	OutputPricePer1K float64               `json:"output_price_per_1k"`
	CreatedAt        time.Time             `json:"created_at"`
	UpdatedAt        time.Time             `json:"updated_at"`
}

func aliasView(a *models.ModelAlias) Alias {
	var rc *models.RoutingConfig
	if len(a.RoutingConfig.Targets) > 0 || len(a.RoutingConfig.Chain) > 0 {
		c := a.RoutingConfig
		rc = &c
	}
	return Alias{
		ID: a.ID, Alias: a.Alias, Provider: a.Provider, Model: a.Model, Enabled: a.Enabled,
		RoutingType: a.RoutingType, RoutingConfig: rc,
		InputPricePer1K: a.InputPricePer1K, OutputPricePer1K: a.OutputPricePer1K,
		CreatedAt: utc(a.CreatedAt), UpdatedAt: utc(a.UpdatedAt),
	}
}

func (in *AliasInput) check(create bool) error {
	trimPtr(in.Alias)
	trimPtr(in.Provider)
	trimPtr(in.Model)
	trimPtr(in.RoutingType)
	var f fieldCheck
	p := in.present
	if create {
		f.required(p, "alias", in.Alias == nil)
	} else {
		f.notNull(p, "alias", in.Alias == nil)
	}
	f.notNull(p, "enabled", in.Enabled == nil)
	f.notNull(p, "routing_type", in.RoutingType == nil)
	f.notNull(p, "input_price_per_1k", in.InputPricePer1K == nil)
	f.notNull(p, "output_price_per_1k", in.OutputPricePer1K == nil)
	f = append(f, validate.Struct(in)...)
	return validate.Fields(f)
}

func applyAlias(in *AliasInput, a *models.ModelAlias) {
	if in.Alias != nil {
		a.Alias = *in.Alias
	}
	if in.present.Has("provider") {
		a.Provider = deref(in.Provider)
	}
	if in.present.Has("model") {
		a.Model = deref(in.Model)
	}
	if in.Enabled != nil {
		a.Enabled = *in.Enabled
	}
	if in.RoutingType != nil {
		a.RoutingType = *in.RoutingType
	}
	if in.present.Has("routing_config") {
		a.RoutingConfig = models.RoutingConfig{}
		if rc := in.RoutingConfig; rc != nil {
			a.RoutingConfig.Targets = targets(rc.Targets, true)
			a.RoutingConfig.Chain = targets(rc.Chain, false)
		}
	}
	if in.InputPricePer1K != nil {
		a.InputPricePer1K = *in.InputPricePer1K
	}
	if in.OutputPricePer1K != nil {
		a.OutputPricePer1K = *in.OutputPricePer1K
	}
}

// targets converts input targets; an absent weight counts as 1 in a
// load_balance list (equal shares) and is not stored for a chain.
func targets(in []TargetInput, weighted bool) []models.RouteTarget {
	if len(in) == 0 {
		return nil
	}
	out := make([]models.RouteTarget, len(in))
	for i, t := range in {
		out[i] = models.RouteTarget{Provider: strings.TrimSpace(t.Provider), Model: strings.TrimSpace(t.Model)}
		if weighted {
			out[i].Weight = 1
			if t.Weight != nil {
				out[i].Weight = *t.Weight
			}
		}
	}
	return out
}

// checkRouting validates the merged alias: what each routing type needs and
// that every provider it names exists.
func (s *Service) checkRouting(ctx context.Context, a *models.ModelAlias) error {
	var f fieldCheck
	type named struct{ field, provider string }
	var names []named
	checkList := func(field string, ts []models.RouteTarget, weighted bool) {
		if len(ts) == 0 {
			f.add(field, "must have at least 1 entry")
		}
		for i, t := range ts {
			at := fmt.Sprintf("%s[%d]", field, i)
			if t.Provider == "" {
				f.add(at+".provider", "is required")
			} else {
				names = append(names, named{at + ".provider", t.Provider})
			}
			if t.Model == "" {
				f.add(at+".model", "is required")
			}
			if weighted && t.Weight <= 0 {
				f.add(at+".weight", "must be > 0")
			}
		}
	}
	switch a.RoutingType {
	case RoutingSimple:
		if a.Provider == "" {
			f.add("provider", "is required")
		} else {
			names = append(names, named{"provider", a.Provider})
		}
		if a.Model == "" {
			f.add("model", "is required")
		}
	case RoutingLoadBalance:
		checkList("routing_config.targets", a.RoutingConfig.Targets, true)
	case RoutingFallback:
		checkList("routing_config.chain", a.RoutingConfig.Chain, false)
	}
	if a.RoutingType != RoutingSimple && a.Provider != "" {
		names = append(names, named{"provider", a.Provider})
	}
	known := map[string]bool{}
	for _, n := range names {
		ok, seen := known[n.provider]
		if !seen {
			_, err := s.st.Providers.GetByName(ctx, n.provider)
			switch {
			case err == nil:
				ok = true
			case errors.Is(err, models.ErrNotFound):
				ok = false
			default:
				return err
			}
			known[n.provider] = ok
		}
		if !ok {
			f.add(n.field, "must name an existing provider (unknown: "+n.provider+")")
		}
	}
	return validate.Fields(f)
}

// CreateAlias validates and stores an alias.
func (s *Service) CreateAlias(ctx context.Context, in *AliasInput) (*Alias, error) {
	if err := in.check(true); err != nil {
		return nil, err
	}
	now := utc(s.now())
	a := &models.ModelAlias{ID: newID(), Enabled: true, RoutingType: RoutingSimple, CreatedAt: now, UpdatedAt: now}
	applyAlias(in, a)
	if err := s.checkRouting(ctx, a); err != nil {
		return nil, err
	}
	if err := s.st.Aliases.Create(ctx, a); err != nil {
		return nil, storeErr(err, "model alias", a.Alias)
	}
	s.changed()
	v := aliasView(a)
	return &v, nil
}

// GetAlias reads an alias by id or by alias name.
func (s *Service) GetAlias(ctx context.Context, ref string) (*Alias, error) {
	a, err := s.st.Aliases.GetByRef(ctx, ref)
	if err != nil {
		return nil, aliasNotFound(err, ref)
	}
	v := aliasView(a)
	return &v, nil
}

func aliasNotFound(err error, ref string) error {
	if isNotFound(err) {
		return apierr.NotFound(fmt.Sprintf("No model alias with id or name '%s'.", ref))
	}
	return err
}

// ListAliases lists aliases newest first.
func (s *Service) ListAliases(ctx context.Context, lp ListParams) (*List[Alias], error) {
	page, fields := parsePage(lp)
	enabled, ef := parseEnabled(lp.Enabled)
	if err := validate.Fields(append(fields, ef...)); err != nil {
		return nil, err
	}
	rows, total, err := s.st.Aliases.List(ctx, page, models.AliasFilter{Enabled: enabled})
	if err != nil {
		return nil, err
	}
	return newList(rows, total, page, func(a *models.ModelAlias) (Alias, error) { return aliasView(a), nil })
}

// UpdateAlias changes the fields present in the body (alias by id or name).
func (s *Service) UpdateAlias(ctx context.Context, ref string, in *AliasInput) (*Alias, error) {
	if err := in.check(false); err != nil {
		return nil, err
	}
	a, err := s.st.Aliases.GetByRef(ctx, ref)
	if err != nil {
		return nil, aliasNotFound(err, ref)
	}
	applyAlias(in, a)
	if err := s.checkRouting(ctx, a); err != nil {
		return nil, err
	}
	a.UpdatedAt = utc(s.now())
	if err := s.st.Aliases.Update(ctx, a); err != nil {
		if isNotFound(err) {
			return nil, aliasNotFound(err, ref)
		}
		return nil, storeErr(err, "model alias", a.Alias)
	}
	s.changed()
	v := aliasView(a)
	return &v, nil
}

// DeleteAlias removes an alias (by id or name).
func (s *Service) DeleteAlias(ctx context.Context, ref string) (*Deleted, error) {
	a, err := s.st.Aliases.GetByRef(ctx, ref)
	if err != nil {
		return nil, aliasNotFound(err, ref)
	}
	if err := s.st.Aliases.Delete(ctx, a.ID); err != nil {
		return nil, aliasNotFound(err, ref)
	}
	s.changed()
	return &Deleted{ID: a.ID, Deleted: true}, nil
}
