package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Stores bundles every store over one connection pool.
type Stores struct {
	DB        *gorm.DB
	Providers *ProviderStore
	Projects  *ProjectStore
	Keys      *KeyStore
	Aliases   *AliasStore
	Items     *ItemStore
	Usage     *UsageStore
}

// NewStores builds every store over db.
func NewStores(db *gorm.DB) *Stores {
	return &Stores{
		DB:        db,
		Providers: &ProviderStore{db: db},
		Projects:  &ProjectStore{db: db},
		Keys:      &KeyStore{db: db},
		Aliases:   &AliasStore{db: db},
		Items:     &ItemStore{db: db},
		Usage:     &UsageStore{db: db},
	}
}

// CatalogVersion reads the version every admin write bumps.
func (s *Stores) CatalogVersion(ctx context.Context) (int64, error) {
	return CatalogVersion(ctx, s.DB)
}

// InUseError is ErrInUse with the names of what still uses the row.
type InUseError struct {
	What  string   // "aliases", "keys"
	Names []string // a few of them
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("still used by %s %s", e.What, strings.Join(e.Names, ", "))
}
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// MissingProvidersError is returned when an alias names providers that do
// not exist (checked inside the write transaction).
type MissingProvidersError struct{ Names []string }

func (e *MissingProvidersError) Error() string {
	return "unknown providers: " + strings.Join(e.Names, ", ")
}

// ErrNoProject: a key names a project_id that does not exist.
var ErrNoProject = errors.New("models: project does not exist")

// ---- providers ----

// ProviderStore persists providers.
type ProviderStore struct{ db *gorm.DB }

// ProviderFilter narrows a provider list.
type ProviderFilter struct{ Enabled *bool }

func (s *ProviderStore) Create(ctx context.Context, p *Provider) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error { return tx.Create(p).Error })
}

func (s *ProviderStore) Get(ctx context.Context, id string) (*Provider, error) {
	return first[Provider](ctx, s.db, "id = ?", id)
}

func (s *ProviderStore) GetByName(ctx context.Context, name string) (*Provider, error) {
	return first[Provider](ctx, s.db, "name = ?", name)
}

func (s *ProviderStore) List(ctx context.Context, p Page, f ProviderFilter) ([]Provider, int64, error) {
	return list[Provider](ctx, s.db, p, func(q *gorm.DB) *gorm.DB {
		if f.Enabled != nil {
			q = q.Where("enabled = ?", *f.Enabled)
		}
		return q
	})
}

// All returns every provider (health fallback, admin checks).
func (s *ProviderStore) All(ctx context.Context) ([]Provider, error) {
	var out []Provider
	err := s.db.WithContext(ctx).Order("name ASC").Find(&out).Error
	return out, err
}

// Update writes p. Renaming a provider that aliases still name is refused
// with an *InUseError: aliases refer to providers by name.
func (s *ProviderStore) Update(ctx context.Context, p *Provider) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error {
		var old Provider
		if err := tx.Where("id = ?", p.ID).First(&old).Error; err != nil {
			return err
		}
		if old.Name != p.Name {
			if err := providerUnused(tx, old.Name); err != nil {
				return err
			}
		}
		return updateRow(tx, p, p.ID)
	})
}

// Delete removes a provider unless an alias still routes to it (*InUseError).
func (s *ProviderStore) Delete(ctx context.Context, id string) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error {
		var p Provider
		if err := tx.Where("id = ?", id).First(&p).Error; err != nil {
			return err
		}
		if err := providerUnused(tx, p.Name); err != nil {
			return err
		}
		return deleteRow(tx, &Provider{}, id)
	})
}

// providerUnused scans the aliases in Go: routing_config is JSON whose
// querying differs per dialect, and admin writes are rare.
func providerUnused(tx *gorm.DB, name string) error {
	var aliases []ModelAlias
	if err := tx.Order("alias ASC").Find(&aliases).Error; err != nil {
		return err
	}
	var users []string
	for _, a := range aliases {
		if a.UsesProvider(name) {
			users = append(users, a.Alias)
		}
	}
	if len(users) > 0 {
		return &InUseError{What: "aliases", Names: users}
	}
	return nil
}

// UsesProvider reports whether the alias routes to the named provider in
// any of its forms (simple, targets, chain).
func (a *ModelAlias) UsesProvider(name string) bool {
	for _, n := range a.ProviderNames() {
		if n == name {
			return true
		}
	}
	return false
}

// ProviderNames lists every provider the alias names, without duplicates.
func (a *ModelAlias) ProviderNames() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	add(a.Provider)
	for _, t := range a.RoutingConfig.Targets {
		add(t.Provider)
	}
	for _, t := range a.RoutingConfig.Chain {
		add(t.Provider)
	}
	return out
}

// ---- projects ----

// ProjectStore persists projects.
type ProjectStore struct{ db *gorm.DB }

func (s *ProjectStore) Create(ctx context.Context, p *Project) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error { return tx.Create(p).Error })
}

func (s *ProjectStore) Get(ctx context.Context, id string) (*Project, error) {
	return first[Project](ctx, s.db, "id = ?", id)
}

func (s *ProjectStore) List(ctx context.Context, p Page) ([]Project, int64, error) {
	return list[Project](ctx, s.db, p, func(q *gorm.DB) *gorm.DB { return q })
}

func (s *ProjectStore) Update(ctx context.Context, p *Project) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error { return updateRow(tx, p, p.ID) })
}

// Delete removes a project unless keys still belong to it (*InUseError):
// silently detaching them would drop their project budget.
func (s *ProjectStore) Delete(ctx context.Context, id string) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error {
		var keys []APIKey
		if err := tx.Where("project_id = ?", id).Order("name ASC").Limit(5).Find(&keys).Error; err != nil {
			return err
		}
		if len(keys) > 0 {
			names := make([]string, len(keys))
			for i, k := range keys {
				names[i] = k.Name
			}
			return &InUseError{What: "keys", Names: names}
		}
		return deleteRow(tx, &Project{}, id)
	})
}

// ---- keys ----

// KeyStore persists virtual keys.
type KeyStore struct{ db *gorm.DB }

// KeyFilter narrows a key list.
type KeyFilter struct {
	Enabled   *bool
	ProjectID *string
}

// Create inserts k; ErrNoProject when its project does not exist.
func (s *KeyStore) Create(ctx context.Context, k *APIKey) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error {
		if err := projectExists(tx, k.ProjectID); err != nil {
			return err
		}
		return tx.Create(k).Error
	})
}

func (s *KeyStore) Get(ctx context.Context, id string) (*APIKey, error) {
	return first[APIKey](ctx, s.db, "id = ?", id)
}

// GetByHash finds a key by the SHA-256 of the presented key.
func (s *KeyStore) GetByHash(ctx context.Context, hash string) (*APIKey, error) {
	return first[APIKey](ctx, s.db, "key_hash = ?", hash)
}

func (s *KeyStore) List(ctx context.Context, p Page, f KeyFilter) ([]APIKey, int64, error) {
	return list[APIKey](ctx, s.db, p, func(q *gorm.DB) *gorm.DB {
		if f.Enabled != nil {
			q = q.Where("enabled = ?", *f.Enabled)
		}
		if f.ProjectID != nil {
			q = q.Where("project_id = ?", *f.ProjectID)
		}
		return q
	})
}

func (s *KeyStore) Update(ctx context.Context, k *APIKey) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error {
		if err := projectExists(tx, k.ProjectID); err != nil {
			return err
		}
		return updateRow(tx, k, k.ID)
	})
}

// Delete removes the key; its usage records stay.
func (s *KeyStore) Delete(ctx context.Context, id string) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error { return deleteRow(tx, &APIKey{}, id) })
}

func projectExists(tx *gorm.DB, id *string) error {
	if id == nil {
		return nil
	}
	var n int64
	if err := tx.Model(&Project{}).Where("id = ?", *id).Count(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return ErrNoProject
	}
	return nil
}

// ---- aliases ----

// AliasStore persists model aliases.
type AliasStore struct{ db *gorm.DB }

// AliasFilter narrows an alias list.
type AliasFilter struct{ Enabled *bool }

// Create inserts a; *MissingProvidersError when it names unknown providers.
func (s *AliasStore) Create(ctx context.Context, a *ModelAlias) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error {
		if err := providersExist(tx, a.ProviderNames()); err != nil {
			return err
		}
		return tx.Create(a).Error
	})
}

func (s *AliasStore) Get(ctx context.Context, id string) (*ModelAlias, error) {
	return first[ModelAlias](ctx, s.db, "id = ?", id)
}

// GetByRef finds an alias by id or, failing that, by alias name.
func (s *AliasStore) GetByRef(ctx context.Context, ref string) (*ModelAlias, error) {
	a, err := first[ModelAlias](ctx, s.db, "id = ?", ref)
	if errors.Is(err, ErrNotFound) {
		return first[ModelAlias](ctx, s.db, "alias = ?", ref)
	}
	return a, err
}

func (s *AliasStore) List(ctx context.Context, p Page, f AliasFilter) ([]ModelAlias, int64, error) {
	return list[ModelAlias](ctx, s.db, p, func(q *gorm.DB) *gorm.DB {
		if f.Enabled != nil {
			q = q.Where("enabled = ?", *f.Enabled)
		}
		return q
	})
}

func (s *AliasStore) Update(ctx context.Context, a *ModelAlias) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error {
		if err := providersExist(tx, a.ProviderNames()); err != nil {
			return err
		}
		return updateRow(tx, a, a.ID)
	})
}

func (s *AliasStore) Delete(ctx context.Context, id string) error {
	return writeTx(ctx, s.db, func(tx *gorm.DB) error { return deleteRow(tx, &ModelAlias{}, id) })
}

func providersExist(tx *gorm.DB, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var found []string
	if err := tx.Model(&Provider{}).Where("name IN ?", names).Pluck("name", &found).Error; err != nil {
		return err
	}
	have := map[string]bool{}
	for _, n := range found {
		have[n] = true
	}
	var missing []string
	for _, n := range names {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return &MissingProvidersError{Names: missing}
	}
	return nil
}

// ---- items ----

// ItemStore persists the item service's items. Items are not part of the
// catalog, so writes do not bump its version.
type ItemStore struct{ db *gorm.DB }

// Create inserts it and sets its id (1, 2, 3... in insertion order).
func (s *ItemStore) Create(ctx context.Context, it *Item) error {
	return mapErr(s.db.WithContext(ctx).Create(it).Error)
}

func (s *ItemStore) Get(ctx context.Context, id int64) (*Item, error) {
	return first[Item](ctx, s.db, "id = ?", id)
}

// List returns every item by id ascending.
func (s *ItemStore) List(ctx context.Context) ([]Item, error) {
	out := []Item{}
	err := s.db.WithContext(ctx).Order("id ASC").Find(&out).Error
	return out, err
}

// utc is how every timestamp is stored, so SQLite's text timestamps compare
// and bucket correctly.
func utc(t time.Time) time.Time { return t.UTC() }
