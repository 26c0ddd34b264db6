package admin

import (
	"context"
	"strings"
	"time"

	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/secret"
	"github.com/llmgw/gateway/services/validate"
)

// KeyInput is the body of POST and PUT /admin/keys.
type KeyInput struct {
	Name          *string  `json:"name" validate:"omitnil,min=1,max=255"`
	ProjectID     *string  `json:"project_id" validate:"omitnil,max=36"`
	RPMLimit      *int     `json:"rpm_limit" validate:"omitnil,gte=0"`
	TPMLimit      *int     `json:"tpm_limit" validate:"omitnil,gte=0"`
	BudgetLimit   *float64 `json:"budget_limit" validate:"omitnil,gt=0"`
	BudgetPeriod  *string  `json:"budget_period" validate:"omitnil,oneof=daily weekly monthly total"`
	AllowedModels []string `json:"allowed_models" validate:"omitempty,max=1000,dive,min=1,max=255"`
	// ExpiresAt is RFC 3339; parsed here so a bad value is a field error.
	ExpiresAt *string `json:"expires_at"`
	Enabled   *bool   `json:"enabled"`
	present   present
	expires   *time.Time
}

// UnmarshalJSON records which fields the body carried.
func (in *KeyInput) UnmarshalJSON(b []byte) error {
	type plain KeyInput
	return decodeTracked(b, (*plain)(in), &in.present)
}

// Key is a virtual key as reads return it: never the key itself.
type Key struct {
	KeyFields
	CurrentSpend float64 `json:"current_spend"` // in the current budget period
}

// KeyFields are the stored fields of a key, shared by reads and the create response.
type KeyFields struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	KeyPrefix     string     `json:"key_prefix"`
	ProjectID     *string    `json:"project_id"`
	RPMLimit      int        `json:"rpm_limit"`
	TPMLimit      int        `json:"tpm_limit"`
	BudgetLimit   *float64   `json:"budget_limit"`
	BudgetPeriod  string     `json:"budget_period"`
	AllowedModels []string   `json:"allowed_models"`
	ExpiresAt     *time.Time `json:"expires_at"`
	Enabled       bool       `json:"enabled"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// CreatedKey is the create response: the only time the full key is shown.
// It carries the stored fields, not current_spend (zero for a new key).
type CreatedKey struct {
	FullKey string `json:"key"`
	KeyFields
}

func (in *KeyInput) check(create bool) error {
	trimPtr(in.Name)
	trimPtr(in.ProjectID)
	trimPtr(in.BudgetPeriod)
	var f fieldCheck
	p := in.present
	if create {
		f.required(p, "name", in.Name == nil)
	} else {
		f.notNull(p, "name", in.Name == nil)
	}
	f.notNull(p, "rpm_limit", in.RPMLimit == nil)
	f.notNull(p, "tpm_limit", in.TPMLimit == nil)
	f.notNull(p, "budget_period", in.BudgetPeriod == nil)
	f.notNull(p, "enabled", in.Enabled == nil)
	if in.ProjectID != nil && *in.ProjectID == "" {
		in.ProjectID = nil // "" means no project, like null
	}
	for i := range in.AllowedModels {
		in.AllowedModels[i] = strings.TrimSpace(in.AllowedModels[i])
	}
	f = append(f, validate.Struct(in)...)
	if in.ExpiresAt != nil && *in.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339, *in.ExpiresAt)
		if err != nil {
			f.add("expires_at", "must be an RFC 3339 timestamp such as 2026-12-31T23:59:59Z")
		} else {
			t = t.UTC()
			in.expires = &t
		}
	}
	return validate.Fields(f)
}

func applyKey(in *KeyInput, k *models.APIKey) {
	if in.Name != nil {
		k.Name = *in.Name
	}
	if in.present.Has("project_id") {
		k.ProjectID = in.ProjectID
	}
	if in.RPMLimit != nil {
		k.RPMLimit = *in.RPMLimit
	}
	if in.TPMLimit != nil {
		k.TPMLimit = *in.TPMLimit
	}
	if in.present.Has("budget_limit") {
		k.BudgetLimit = in.BudgetLimit
	}
	if in.BudgetPeriod != nil {
		k.BudgetPeriod = *in.BudgetPeriod
	}
	if in.present.Has("allowed_models") {
		k.AllowedModels = dedupe(in.AllowedModels)
	}
	if in.present.Has("expires_at") {
		k.ExpiresAt = in.expires
	}
	if in.Enabled != nil {
		k.Enabled = *in.Enabled
	}
}

func dedupe(xs []string) []string {
	out := make([]string, 0, len(xs))
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func (s *Service) keyView(ctx context.Context, k *models.APIKey) (Key, error) {
	spend, err := s.spend.CurrentSpend(ctx, "key", k.ID, k.BudgetPeriod)
	if err != nil {
		return Key{}, apierr.Internal("Could not read the key's spend.").WithCause(err)
	}
	return Key{KeyFields: keyFields(k), CurrentSpend: spend}, nil
}

func keyFields(k *models.APIKey) KeyFields {
	allowed := k.AllowedModels
	if allowed == nil {
		allowed = []string{}
	}
	return KeyFields{
		ID: k.ID, Name: k.Name, KeyPrefix: k.KeyPrefix, ProjectID: k.ProjectID,
		RPMLimit: k.RPMLimit, TPMLimit: k.TPMLimit, BudgetLimit: k.BudgetLimit, BudgetPeriod: k.BudgetPeriod,
		AllowedModels: allowed, ExpiresAt: ptrUTC(k.ExpiresAt), Enabled: k.Enabled,
		CreatedAt: utc(k.CreatedAt), UpdatedAt: utc(k.UpdatedAt),
	}
}

// CreateKey generates a virtual key, stores only its hash and returns the
// full key once.
func (s *Service) CreateKey(ctx context.Context, in *KeyInput) (*CreatedKey, error) {
	if err := in.check(true); err != nil {
		return nil, err
	}
	full, err := newVirtualKey()
	if err != nil {
		return nil, apierr.Internal("Could not generate a key.").WithCause(err)
	}
	now := utc(s.now())
	k := &models.APIKey{
		ID: newID(), KeyHash: secret.Hash(full), KeyPrefix: full[:keyPrefixLen],
		BudgetPeriod: PeriodMonthly, Enabled: true, AllowedModels: []string{}, CreatedAt: now, UpdatedAt: now,
	}
	applyKey(in, k)
	if err := s.st.Keys.Create(ctx, k); err != nil {
		return nil, storeErr(err, "key", k.Name)
	}
	s.changed()
	return &CreatedKey{FullKey: full, KeyFields: keyFields(k)}, nil
}

// GetKey reads one key (without the key itself).
func (s *Service) GetKey(ctx context.Context, id string) (*Key, error) {
	k, err := s.st.Keys.Get(ctx, id)
	if err != nil {
		return nil, storeErr(err, "key", id)
	}
	v, err := s.keyView(ctx, k)
	return &v, err
}

// ListKeys lists keys newest first, optionally by enabled and project.
func (s *Service) ListKeys(ctx context.Context, lp ListParams) (*List[Key], error) {
	page, fields := parsePage(lp)
	enabled, ef := parseEnabled(lp.Enabled)
	if err := validate.Fields(append(fields, ef...)); err != nil {
		return nil, err
	}
	filter := models.KeyFilter{Enabled: enabled}
	if lp.ProjectID != "" {
		filter.ProjectID = &lp.ProjectID
	}
	rows, total, err := s.st.Keys.List(ctx, page, filter)
	if err != nil {
		return nil, err
	}
	return newList(rows, total, page, func(k *models.APIKey) (Key, error) { return s.keyView(ctx, k) })
}

// UpdateKey changes the fields present in the body; the key itself never changes.
func (s *Service) UpdateKey(ctx context.Context, id string, in *KeyInput) (*Key, error) {
	if err := in.check(false); err != nil {
		return nil, err
	}
	k, err := s.st.Keys.Get(ctx, id)
	if err != nil {
		return nil, storeErr(err, "key", id)
	}
	applyKey(in, k)
	k.UpdatedAt = utc(s.now())
	if err := s.st.Keys.Update(ctx, k); err != nil {
		return nil, storeErr(err, "key", id)
	}
	s.changed()
	v, err := s.keyView(ctx, k)
	return &v, err
}

// DeleteKey removes a key: it stops working at once, its usage stays.
func (s *Service) DeleteKey(ctx context.Context, id string) (*Deleted, error) {
	if err := s.st.Keys.Delete(ctx, id); err != nil {
		return nil, storeErr(err, "key", id)
	}
	s.changed()
	return &Deleted{ID: id, Deleted: true}, nil
}
