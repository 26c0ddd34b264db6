// Package catalog is the in-memory view of keys, projects, providers and
// aliases that the request path reads instead of the database. A snapshot is
// immutable and swapped atomically: admin writes on this instance reload it
// at once, and a poller notices other instances' writes through the catalog
// version row within one poll interval.
package catalog

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/provider"
	"github.com/llmgw/gateway/services/secret"
)

// Provider is an upstream provider with its decrypted credential.
type Provider struct {
	ID         string
	Name       string
	Type       provider.Type
	BaseURL    string
	APIKey     secret.Secret
	APIVersion string
	RPMLimit   int64
	TPMLimit   int64
	Enabled    bool
}

// Project is a budget group.
type Project struct {
	ID           string
	Name         string
	BudgetLimit  float64 // 0 = none
	BudgetPeriod string
}

// Key is a virtual key, looked up by the SHA-256 of the presented key.
type Key struct {
	ID            string
	Name          string
	ProjectID     string
	RPMLimit      int64
	TPMLimit      int64
	BudgetLimit   float64 // 0 = none
	BudgetPeriod  string
	AllowedModels map[string]bool // nil = every model
	Enabled       bool
	ExpiresAt     *time.Time
}

// Allows reports whether the key may call model (alias or provider:model).
func (k *Key) Allows(model string) bool { return k.AllowedModels == nil || k.AllowedModels[model] }

// Expired reports whether the key's expiry has passed at now.
func (k *Key) Expired(now time.Time) bool { return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) }

// RouteTarget is one provider/model of an alias.
type RouteTarget struct {
	Provider string
	Model    string
	Weight   float64
}

// Alias is a model alias with its targets resolved from routing_config.
type Alias struct {
	ID               string
	Name             string
	Enabled          bool
	RoutingType      string // simple | load_balance | fallback
	Targets          []RouteTarget
	InputPricePer1K  float64
	OutputPricePer1K float64
	Created          time.Time
}

// Snapshot is one immutable, consistent view of the catalog.
type Snapshot struct {
	Version   int64
	keys      map[string]*Key // by key hash
	projects  map[string]*Project
	providers map[string]*Provider // by name
	aliases   map[string]*Alias    // by alias name
	ordered   []*Alias             // creation order
	prices    map[string]*Alias    // "provider\x00model" → first alias with that target
}

// KeyByHash returns the key whose SHA-256 is hash.
func (s *Snapshot) KeyByHash(hash string) (*Key, bool) { k, ok := s.keys[hash]; return k, ok }

// Project returns a project by id.
func (s *Snapshot) Project(id string) (*Project, bool) { p, ok := s.projects[id]; return p, ok }

// Provider returns a provider by name.
func (s *Snapshot) Provider(name string) (*Provider, bool) { p, ok := s.providers[name]; return p, ok }

// Alias returns an alias by name.
func (s *Snapshot) Alias(name string) (*Alias, bool) { a, ok := s.aliases[name]; return a, ok }

// Aliases lists aliases in creation order.
func (s *Snapshot) Aliases() []*Alias { return s.ordered }

// Providers lists every provider.
func (s *Snapshot) Providers() []*Provider {
	out := make([]*Provider, 0, len(s.providers))
	for _, p := range s.providers {
		out = append(out, p)
	}
	return out
}

// PriceAlias returns the first alias (by creation) that routes to
// provider/model: the contract prices provider:model calls from it.
func (s *Snapshot) PriceAlias(providerName, model string) (*Alias, bool) {
	a, ok := s.prices[providerName+"\x00"+model]
	return a, ok
}

// Source reads the catalog tables.
type Source interface {
	Load(ctx context.Context) (*models.CatalogRows, error)
	Version(ctx context.Context) (int64, error)
}

// Catalog holds the current snapshot.
type Catalog struct {
	src    Source
	box    *secret.Box
	cur    atomic.Pointer[Snapshot]
	mu     sync.Mutex // serialises reloads
	onErr  func(error)
	onLoad func(*Snapshot)
}

// Options configures a Catalog.
type Options struct {
	// OnError is told about failed background reloads (logging); may be nil.
	OnError func(error)
	// OnLoad is told about every new snapshot (e.g. to prune per-provider state); may be nil.
	OnLoad func(*Snapshot)
}

// New loads the first snapshot.
func New(ctx context.Context, src Source, box *secret.Box, o Options) (*Catalog, error) {
	c := &Catalog{src: src, box: box, onErr: o.OnError, onLoad: o.OnLoad}
	if err := c.Reload(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Current returns the snapshot in force; never nil after New.
func (c *Catalog) Current() *Snapshot { return c.cur.Load() }

// Reload reads the database and swaps in a new snapshot.
func (c *Catalog) Reload(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows, err := c.src.Load(ctx)
	if err != nil {
		return err
	}
	snap, err := build(rows, c.box)
	if err != nil {
		return err
	}
	c.cur.Store(snap)
	if c.onLoad != nil {
		c.onLoad(snap)
	}
	return nil
}

// Invalidate reloads after an admin write on this instance. It retries
// briefly because a write the client has already seen must show on the next
// request.
func (c *Catalog) Invalidate() {
	var err error
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = c.Reload(ctx)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c.onErr != nil {
		c.onErr(err)
	}
}

// Watch polls the catalog version every interval and reloads when another
// instance changed it, until ctx ends. One cheap single-row query per
// interval. A failing database is reported once, not every interval; the
// snapshot in memory keeps serving meanwhile.
func (c *Catalog) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := c.refresh(ctx, interval)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !failing && c.onErr != nil {
			c.onErr(err)
		}
		failing = err != nil
	}
}

func (c *Catalog) refresh(ctx context.Context, timeout time.Duration) error {
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := c.src.Version(qctx)
	if err != nil || v == c.Current().Version {
		return err
	}
	return c.Reload(ctx)
}

func build(rows *models.CatalogRows, box *secret.Box) (*Snapshot, error) {
	s := &Snapshot{
		Version:   rows.Version,
		keys:      make(map[string]*Key, len(rows.Keys)),
		projects:  make(map[string]*Project, len(rows.Projects)),
		providers: make(map[string]*Provider, len(rows.Providers)),
		aliases:   make(map[string]*Alias, len(rows.Aliases)),
		prices:    make(map[string]*Alias),
	}
	for _, p := range rows.Providers {
		var key secret.Secret
		if p.APIKeyEnc != "" {
			k, err := box.Open(p.APIKeyEnc)
			if err != nil {
				// A key sealed under another encryption key cannot be used;
				// the provider stays listed so the operator sees it.
				k = ""
			}
			key = k
		}
		typ := provider.Type(p.Type)
		if typ == "" {
			typ = provider.InferType(p.Name, p.APIBase)
		}
		ver := ""
		if p.APIVersion != nil {
			ver = *p.APIVersion
		}
		s.providers[p.Name] = &Provider{
			ID: p.ID, Name: p.Name, Type: typ, BaseURL: strings.TrimRight(p.APIBase, "/"),
			APIKey: key, APIVersion: ver, RPMLimit: int64(p.RPMLimit), TPMLimit: int64(p.TPMLimit),
			Enabled: p.Enabled,
		}
	}
	for _, p := range rows.Projects {
		s.projects[p.ID] = &Project{ID: p.ID, Name: p.Name, BudgetLimit: deref(p.BudgetLimit), BudgetPeriod: p.BudgetPeriod}
	}
	for _, k := range rows.Keys {
		key := &Key{
			ID: k.ID, Name: k.Name, RPMLimit: int64(k.RPMLimit), TPMLimit: int64(k.TPMLimit),
			BudgetLimit: deref(k.BudgetLimit), BudgetPeriod: k.BudgetPeriod, Enabled: k.Enabled,
			ExpiresAt: k.ExpiresAt,
		}
		if k.ProjectID != nil {
			key.ProjectID = *k.ProjectID
		}
		if len(k.AllowedModels) > 0 {
			key.AllowedModels = make(map[string]bool, len(k.AllowedModels))
			for _, m := range k.AllowedModels {
				key.AllowedModels[m] = true
			}
		}
		s.keys[k.KeyHash] = key
	}
	for _, a := range rows.Aliases {
		al := &Alias{
			ID: a.ID, Name: a.Alias, Enabled: a.Enabled, RoutingType: a.RoutingType,
			InputPricePer1K: a.InputPricePer1K, OutputPricePer1K: a.OutputPricePer1K, Created: a.CreatedAt,
		}
		switch a.RoutingType {
		case "load_balance":
			for _, t := range a.RoutingConfig.Targets {
				al.Targets = append(al.Targets, RouteTarget{Provider: t.Provider, Model: t.Model, Weight: t.Weight})
			}
		case "fallback":
			for _, t := range a.RoutingConfig.Chain {
				al.Targets = append(al.Targets, RouteTarget{Provider: t.Provider, Model: t.Model, Weight: 1})
			}
		default:
			al.RoutingType = "simple"
			al.Targets = []RouteTarget{{Provider: a.Provider, Model: a.Model, Weight: 1}}
		}
		s.aliases[al.Name] = al
		s.ordered = append(s.ordered, al)
		for _, t := range al.Targets {
			k := t.Provider + "\x00" + t.Model
			if _, seen := s.prices[k]; !seen {
				s.prices[k] = al
			}
		}
	}
	return s, nil
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
