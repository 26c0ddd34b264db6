// Package models holds the GORM models, the database connection and the
// stores. It is the only package that imports GORM.
package models

import "time"

// Provider is an upstream model provider. The api key is stored sealed
// (AES-GCM, see services/secret) and never leaves the process in clear.
type Provider struct {
	ID         string    `gorm:"primaryKey;size:36"`
	Name       string    `gorm:"size:255;not null;uniqueIndex"`
	Type       string    `gorm:"size:32;not null"`
	APIBase    string    `gorm:"size:2048;not null"`
	APIKeyEnc  string    `gorm:"type:text"` // sealed api key, "" when none
	APIVersion *string   `gorm:"size:64"`
	RPMLimit   int       `gorm:"not null;default:0"`
	TPMLimit   int       `gorm:"not null;default:0"`
	Enabled    bool      `gorm:"not null;index"`
	CreatedAt  time.Time `gorm:"not null;index"`
	UpdatedAt  time.Time `gorm:"not null"`
}

// Project groups keys under one budget.
type Project struct {
	ID           string    `gorm:"primaryKey;size:36"`
	Name         string    `gorm:"size:255;not null;uniqueIndex"`
	Description  string    `gorm:"type:text"`
	BudgetLimit  *float64  // USD, nil = no budget
	BudgetPeriod string    `gorm:"size:16;not null;default:monthly"`
	CreatedAt    time.Time `gorm:"not null;index"`
	UpdatedAt    time.Time `gorm:"not null"`
}

// APIKey is a virtual key. Only the SHA-256 of the key is stored.
type APIKey struct {
	ID            string   `gorm:"primaryKey;size:36"`
	Name          string   `gorm:"size:255;not null"`
	KeyHash       string   `gorm:"size:64;not null;uniqueIndex"`
	KeyPrefix     string   `gorm:"size:16;not null"`
	ProjectID     *string  `gorm:"size:36;index"`
	RPMLimit      int      `gorm:"not null;default:0"`
	TPMLimit      int      `gorm:"not null;default:0"`
	BudgetLimit   *float64 // USD, nil = no budget
	BudgetPeriod  string   `gorm:"size:16;not null;default:monthly"`
	AllowedModels []string `gorm:"serializer:json;type:text"`
	Enabled       bool     `gorm:"not null;index"`
	ExpiresAt     *time.Time
	CreatedAt     time.Time `gorm:"not null;index"`
	UpdatedAt     time.Time `gorm:"not null"`
}

// RouteTarget is one provider/model of a load_balance or fallback alias.
type RouteTarget struct {
	Provider string  `json:"provider"`
	Model    string  `json:"model"`
	Weight   float64 `json:"weight,omitempty"`
}

// RoutingConfig is routing_config of an alias.
type RoutingConfig struct {
	Targets []RouteTarget `json:"targets,omitempty"`
	Chain   []RouteTarget `json:"chain,omitempty"`
}

// ModelAlias maps a client-facing model name to upstream targets.
type ModelAlias struct {
	ID               string        `gorm:"primaryKey;size:36"`
	Alias            string        `gorm:"size:255;not null;uniqueIndex"`
	Provider         string        `gorm:"size:255"` // provider name (simple)
	Model            string        `gorm:"size:255"` // upstream model (simple)
	Enabled          bool          `gorm:"not null;index"`
	RoutingType      string        `gorm:"size:32;not null;default:simple"`
	RoutingConfig    RoutingConfig `gorm:"serializer:json;type:text"`
	InputPricePer1K  float64       `gorm:"not null;default:0"`
	OutputPricePer1K float64       `gorm:"not null;default:0"`
	CreatedAt        time.Time     `gorm:"not null;index"`
	UpdatedAt        time.Time     `gorm:"not null"`
}

// UsageRecord is one model call, successful or not. RequestID is unique so a
// batch written twice (a retry after a lost acknowledgement) is not counted twice.
type UsageRecord struct {
	ID            int64     `gorm:"primaryKey;autoIncrement"`
	RequestID     string    `gorm:"size:64;not null;uniqueIndex"`
	KeyID         string    `gorm:"size:36;index"`
	ProjectID     string    `gorm:"size:36;index"`
	Model         string    `gorm:"size:255;index"` // as the client sent it
	Provider      string    `gorm:"size:255;index"` // provider name that served (or last tried)
	UpstreamModel string    `gorm:"size:255"`
	InputTokens   int       `gorm:"not null;default:0"`
	OutputTokens  int       `gorm:"not null;default:0"`
	TotalTokens   int       `gorm:"not null;default:0"`
	Cost          float64   `gorm:"not null;default:0"`
	LatencyMS     int64     `gorm:"not null;default:0"`
	Status        int       `gorm:"not null"` // HTTP status the client got
	ErrorType     string    `gorm:"size:64"`  // "" on success
	Stream        bool      `gorm:"not null"`
	Attempts      int       `gorm:"not null;default:1"` // upstream attempts incl. retries/fallbacks
	CreatedAt     time.Time `gorm:"not null;index"`
}

// Item is a record of the item service.
type Item struct {
	ID          int64   `gorm:"primaryKey;autoIncrement"`
	Name        string  `gorm:"size:255;not null"`
	Description *string `gorm:"type:text"`
}

// CatalogState is a single row whose Version every admin write bumps in the
// same transaction, so other instances notice changes with one cheap query.
type CatalogState struct {
	ID      int   `gorm:"primaryKey"`
	Version int64 `gorm:"not null;default:0"`
}
