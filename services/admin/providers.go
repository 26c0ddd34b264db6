package admin

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/validate"
)

// ProviderInput is the body of POST and PUT /admin/providers.
type ProviderInput struct {
	Name       *string `json:"name" validate:"omitnil,min=1,max=255"`
	Type       *string `json:"type" validate:"omitnil,oneof=openai anthropic azure"`
	APIBase    *string `json:"api_base" validate:"omitnil,max=2048"`
	APIKey     *string `json:"api_key"`
	APIVersion *string `json:"api_version" validate:"omitnil,max=64"`
	RPMLimit   *int    `json:"rpm_limit" validate:"omitnil,gte=0"`
	TPMLimit   *int    `json:"tpm_limit" validate:"omitnil,gte=0"`
	Enabled    *bool   `json:"enabled"`
	present    present
}

// UnmarshalJSON records which fields the body carried.
func (in *ProviderInput) UnmarshalJSON(b []byte) error {
	type plain ProviderInput
	return decodeTracked(b, (*plain)(in), &in.present)
}

// Provider is a provider as the API returns it: never the api key.
type Provider struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	APIBase    string    `json:"api_base"`
	APIVersion *string   `json:"api_version"`
	RPMLimit   int       `json:"rpm_limit"`
	TPMLimit   int       `json:"tpm_limit"`
	Enabled    bool      `json:"enabled"`
	APIKeySet  bool      `json:"api_key_set"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func providerView(p *models.Provider) Provider {
	return Provider{
		ID: p.ID, Name: p.Name, Type: p.Type, APIBase: p.APIBase, APIVersion: p.APIVersion,
		RPMLimit: p.RPMLimit, TPMLimit: p.TPMLimit, Enabled: p.Enabled, APIKeySet: p.APIKeyEnc != "",
		CreatedAt: utc(p.CreatedAt), UpdatedAt: utc(p.UpdatedAt),
	}
}

func (in *ProviderInput) check(create bool) error {
	trimPtr(in.Name)
	trimPtr(in.Type)
	trimPtr(in.APIBase)
	if in.Type != nil {
		*in.Type = strings.ToLower(*in.Type)
	}
	var f fieldCheck
	p := in.present
	if create {
		f.required(p, "name", in.Name == nil)
		f.required(p, "api_base", in.APIBase == nil)
	} else {
		f.notNull(p, "name", in.Name == nil)
		f.notNull(p, "api_base", in.APIBase == nil)
	}
	f.notNull(p, "rpm_limit", in.RPMLimit == nil)
	f.notNull(p, "tpm_limit", in.TPMLimit == nil)
	f.notNull(p, "enabled", in.Enabled == nil)
	f = append(f, validate.Struct(in)...)
	if in.APIBase != nil && !isHTTPURL(*in.APIBase) {
		f.add("api_base", "must be an http(s) URL")
	}
	return validate.Fields(f)
}

// isHTTPURL accepts absolute http and https URLs with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// apply copies the present fields onto p, sealing a new api key.
func (s *Service) applyProvider(in *ProviderInput, p *models.Provider) error {
	if in.Name != nil {
		p.Name = *in.Name
	}
	if in.APIBase != nil {
		// Base URLs follow each vendor SDK's convention; a trailing slash is
		// dropped so the gateway can append paths without doubling it.
		p.APIBase = strings.TrimRight(*in.APIBase, "/")
	}
	if in.present.Has("api_version") {
		p.APIVersion = in.APIVersion
	}
	if in.present.Has("api_key") {
		p.APIKeyEnc = ""
		if k := deref(in.APIKey); k != "" {
			sealed, err := s.box.Seal(k)
			if err != nil {
				return apierr.Internal("Could not encrypt the provider api key.").WithCause(err)
			}
			p.APIKeyEnc = sealed
		}
	}
	if in.RPMLimit != nil {
		p.RPMLimit = *in.RPMLimit
	}
	if in.TPMLimit != nil {
		p.TPMLimit = *in.TPMLimit
	}
	if in.Enabled != nil {
		p.Enabled = *in.Enabled
	}
	switch {
	case in.Type != nil:
		p.Type = *in.Type
	case p.Type == "" || in.present.Has("type"): // absent on create, or null: infer
		p.Type = string(provider.InferType(p.Name, p.APIBase))
	}
	return nil
}

// CreateProvider validates and stores a provider.
func (s *Service) CreateProvider(ctx context.Context, in *ProviderInput) (*Provider, error) {
	if err := in.check(true); err != nil {
		return nil, err
	}
	now := utc(s.now())
	p := &models.Provider{ID: newID(), Enabled: true, CreatedAt: now, UpdatedAt: now}
	if err := s.applyProvider(in, p); err != nil {
		return nil, err
	}
	if err := s.st.Providers.Create(ctx, p); err != nil {
		return nil, storeErr(err, "provider", p.Name)
	}
	s.changed()
	v := providerView(p)
	return &v, nil
}

// GetProvider reads one provider.
func (s *Service) GetProvider(ctx context.Context, id string) (*Provider, error) {
	p, err := s.st.Providers.Get(ctx, id)
	if err != nil {
		return nil, storeErr(err, "provider", id)
	}
	v := providerView(p)
	return &v, nil
}

// ListProviders lists providers newest first.
func (s *Service) ListProviders(ctx context.Context, lp ListParams) (*List[Provider], error) {
	page, fields := parsePage(lp)
	enabled, ef := parseEnabled(lp.Enabled)
	if err := validate.Fields(append(fields, ef...)); err != nil {
		return nil, err
	}
	rows, total, err := s.st.Providers.List(ctx, page, models.ProviderFilter{Enabled: enabled})
	if err != nil {
		return nil, err
	}
	return newList(rows, total, page, func(p *models.Provider) (Provider, error) { return providerView(p), nil })
}

// UpdateProvider changes the fields present in the body.
func (s *Service) UpdateProvider(ctx context.Context, id string, in *ProviderInput) (*Provider, error) {
	if err := in.check(false); err != nil {
		return nil, err
	}
	p, err := s.st.Providers.Get(ctx, id)
	if err != nil {
		return nil, storeErr(err, "provider", id)
	}
	oldName := p.Name
	if err := s.applyProvider(in, p); err != nil {
		return nil, err
	}
	p.UpdatedAt = utc(s.now())
	if err := s.st.Providers.Update(ctx, p); err != nil {
		label := p.Name
		if oldName != p.Name {
			label = oldName // in use: the old name is what aliases still reference
		}
		if isNotFound(err) {
			label = id
		}
		if isDuplicate(err) {
			label = p.Name
		}
		return nil, storeErr(err, "provider", label)
	}
	s.changed()
	v := providerView(p)
	return &v, nil
}

// DeleteProvider removes a provider no alias uses (409 otherwise).
func (s *Service) DeleteProvider(ctx context.Context, id string) (*Deleted, error) {
	p, err := s.st.Providers.Get(ctx, id)
	if err != nil {
		return nil, storeErr(err, "provider", id)
	}
	if err := s.st.Providers.Delete(ctx, id); err != nil {
		label := p.Name
		if isNotFound(err) {
			label = id
		}
		return nil, storeErr(err, "provider", label)
	}
	s.changed()
	return &Deleted{ID: id, Deleted: true}, nil
}
