package models

import (
	"context"

	"gorm.io/gorm"
)

// CatalogRows is everything the request path needs from the database, read
// in one consistent snapshot (one transaction) so the in-memory catalog never
// sees a key without its project or an alias without its provider.
type CatalogRows struct {
	Version   int64
	Providers []Provider
	Projects  []Project
	Keys      []APIKey
	Aliases   []ModelAlias
}

// CatalogSource reads the catalog tables.
type CatalogSource struct{ db *gorm.DB }

// NewCatalogSource wraps db.
func NewCatalogSource(db *gorm.DB) *CatalogSource { return &CatalogSource{db: db} }

// Load reads every provider, project, key and alias.
func (s *CatalogSource) Load(ctx context.Context) (*CatalogRows, error) {
	var rows CatalogRows
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var st CatalogState
		if err := tx.Where("id = ?", 1).Limit(1).Find(&st).Error; err != nil {
			return err
		}
		rows.Version = st.Version
		if err := tx.Find(&rows.Providers).Error; err != nil {
			return err
		}
		if err := tx.Find(&rows.Projects).Error; err != nil {
			return err
		}
		if err := tx.Find(&rows.Keys).Error; err != nil {
			return err
		}
		return tx.Order("created_at ASC, id ASC").Find(&rows.Aliases).Error
	})
	if err != nil {
		return nil, err
	}
	return &rows, nil
}

// Version reads the catalog version that every admin write bumps.
func (s *CatalogSource) Version(ctx context.Context) (int64, error) {
	var st CatalogState
	err := s.db.WithContext(ctx).Where("id = ?", 1).Limit(1).Find(&st).Error
	return st.Version, err
}
