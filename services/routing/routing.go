// Package routing turns the model string of a request into an ordered list of
// upstream candidates: an alias (simple, load_balance, fallback) or a direct
// provider:model. Strategies are tiny types behind one interface.
package routing

import (
	"math/rand/v2"
	"strings"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/catalog"
)

// Candidate is one provider/model the request may be sent to.
type Candidate struct {
	Provider *catalog.Provider
	Model    string
	Weight   float64
}

// Plan is the resolved route of one model string.
type Plan struct {
	// Alias that matched, nil for provider:model.
	Alias      *catalog.Alias
	Strategy   Strategy
	Candidates []Candidate
	// Prices per 1000 tokens, from the alias (or the first alias routing to
	// provider/model for a direct call), 0 when none.
	InputPricePer1K  float64
	OutputPricePer1K float64
}

// Order returns the attempt order for one request.
func (p *Plan) Order() []Candidate { return p.Strategy.Order(p.Candidates) }

// Strategy orders candidates for one request.
type Strategy interface {
	Name() string
	Order(c []Candidate) []Candidate
}

// Simple sends to its one target.
type Simple struct{}

func (Simple) Name() string                    { return "simple" }
func (Simple) Order(c []Candidate) []Candidate { return c }

// Fallback tries the chain in order.
type Fallback struct{}

func (Fallback) Name() string                    { return "fallback" }
func (Fallback) Order(c []Candidate) []Candidate { return c }

// LoadBalance picks targets by weighted random draw without replacement: the
// first draw serves the request, the rest are its fallbacks in drawn order.
type LoadBalance struct{}

func (LoadBalance) Name() string { return "load_balance" }

func (LoadBalance) Order(c []Candidate) []Candidate {
	if len(c) <= 1 {
		return c
	}
	rest := append([]Candidate(nil), c...)
	out := make([]Candidate, 0, len(c))
	for len(rest) > 0 {
		total := 0.0
		for _, t := range rest {
			total += t.Weight
		}
		i := 0
		if total > 0 {
			r := rand.Float64() * total
			for i = 0; i < len(rest)-1; i++ {
				r -= rest[i].Weight
				if r < 0 {
					break
				}
			}
		}
		out = append(out, rest[i])
		rest = append(rest[:i], rest[i+1:]...)
	}
	return out
}

// Resolve maps model (alias or provider:model) to a plan. Targets whose
// provider no longer exists are dropped; disabled providers stay in the plan
// so the caller can tell "disabled" (503) from "unknown" (404).
func Resolve(s *catalog.Snapshot, model string) (*Plan, error) {
	if a, ok := s.Alias(model); ok {
		if !a.Enabled {
			return nil, apierr.NotFound("Model alias '" + model + "' is disabled.")
		}
		p := &Plan{Alias: a, InputPricePer1K: a.InputPricePer1K, OutputPricePer1K: a.OutputPricePer1K}
		switch a.RoutingType {
		case "load_balance":
			p.Strategy = LoadBalance{}
		case "fallback":
			p.Strategy = Fallback{}
		default:
			p.Strategy = Simple{}
		}
		for _, t := range a.Targets {
			if pr, ok := s.Provider(t.Provider); ok {
				p.Candidates = append(p.Candidates, Candidate{Provider: pr, Model: t.Model, Weight: t.Weight})
			}
		}
		if len(p.Candidates) == 0 {
			return nil, apierr.Unavailable("No provider of model alias '"+model+"' exists.", map[string]any{"model": model})
		}
		return p, nil
	}
	name, upstream, ok := strings.Cut(model, ":")
	if ok && name != "" && upstream != "" {
		if pr, found := s.Provider(name); found {
			p := &Plan{Strategy: Simple{}, Candidates: []Candidate{{Provider: pr, Model: upstream, Weight: 1}}}
			if a, ok := s.PriceAlias(name, upstream); ok {
				p.InputPricePer1K, p.OutputPricePer1K = a.InputPricePer1K, a.OutputPricePer1K
			}
			return p, nil
		}
		return nil, apierr.NotFound("Provider '" + name + "' does not exist.")
	}
	return nil, apierr.NotFound("Model '" + model + "' is not a known alias or provider:model.")
}
