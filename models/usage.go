package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// UsageStore persists usage records and answers the statistics queries.
type UsageStore struct{ db *gorm.DB }

// insertChunk keeps one INSERT well under SQLite's and PostgreSQL's bound
// parameter limits (18 columns × 200 rows).
const insertChunk = 200

// InsertBatch writes records; one whose request_id is already stored is
// skipped, so a batch retried after a lost acknowledgement is not counted twice.
func (s *UsageStore) InsertBatch(ctx context.Context, recs []UsageRecord) error {
	if len(recs) == 0 {
		return nil
	}
	for i := range recs {
		recs[i].ID = 0 // let the database number them
		if recs[i].CreatedAt.IsZero() {
			recs[i].CreatedAt = time.Now()
		}
		recs[i].CreatedAt = utc(recs[i].CreatedAt)
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for start := 0; start < len(recs); start += insertChunk {
			end := min(start+insertChunk, len(recs))
			chunk := recs[start:end]
			err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "request_id"}}, DoNothing: true}).
				Create(&chunk).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// SumCost is the cost recorded for one key or project since a moment.
// column is "key_id" or "project_id".
func (s *UsageStore) SumCost(ctx context.Context, column, id string, since time.Time) (float64, error) {
	if column != "key_id" && column != "project_id" {
		return 0, fmt.Errorf("models: SumCost by %q: want key_id or project_id", column)
	}
	var sum float64
	err := s.db.WithContext(ctx).Model(&UsageRecord{}).
		Where(column+" = ? AND created_at >= ?", id, utc(since)).
		Select("COALESCE(SUM(cost), 0)").Scan(&sum).Error
	return sum, err
}

// StatsGroup is what statistics rows are grouped by.
type StatsGroup string

const (
	GroupHour     StatsGroup = "hour"
	GroupDay      StatsGroup = "day"
	GroupProvider StatsGroup = "provider"
	GroupModel    StatsGroup = "model" // the model string the client sent
	GroupKey      StatsGroup = "key"   // key id
)

// StatsQuery selects usage records: created_at in [Start, End) and the
// optional filters ("" = any).
type StatsQuery struct {
	Start, End time.Time
	GroupBy    StatsGroup
	KeyID      string
	ProjectID  string
	Provider   string
	Model      string
}

// StatsFigures are the aggregates of a group or of everything.
type StatsFigures struct {
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	TotalTokens  int64   `json:"total_tokens"`
	Cost         float64 `json:"cost"`
	AvgLatencyMS float64 `json:"avg_latency_ms"`
}

// StatsRow is one group.
type StatsRow struct {
	Group string `json:"group"`
	StatsFigures
}

// StatsResult is every group, ordered by group, and the totals.
type StatsResult struct {
	Rows   []StatsRow
	Totals StatsFigures
}

const figuresSQL = `COUNT(*) AS requests,
	COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0) AS errors,
	COALESCE(SUM(input_tokens), 0) AS input_tokens,
	COALESCE(SUM(output_tokens), 0) AS output_tokens,
	COALESCE(SUM(total_tokens), 0) AS total_tokens,
	COALESCE(SUM(cost), 0) AS cost,
	COALESCE(AVG(latency_ms), 0) AS avg_latency_ms`

// Stats aggregates usage in SQL (GROUP BY), on both dialects.
func (s *UsageStore) Stats(ctx context.Context, q StatsQuery) (*StatsResult, error) {
	var groupExpr string
	switch q.GroupBy {
	case GroupHour, GroupDay:
		e, err := timeBucketExpr(s.db, Bucket(q.GroupBy))
		if err != nil {
			return nil, err
		}
		groupExpr = e
	case GroupProvider:
		groupExpr = "provider"
	case GroupModel:
		groupExpr = "model"
	case GroupKey:
		groupExpr = "key_id"
	default:
		return nil, fmt.Errorf("models: unknown stats grouping %q", q.GroupBy)
	}
	filtered := func() *gorm.DB {
		db := s.db.WithContext(ctx).Model(&UsageRecord{}).
			Where("created_at >= ? AND created_at < ?", utc(q.Start), utc(q.End))
		for col, v := range map[string]string{"key_id": q.KeyID, "project_id": q.ProjectID, "provider": q.Provider, "model": q.Model} {
			if v != "" {
				db = db.Where(col+" = ?", v)
			}
		}
		return db
	}
	// "group" is reserved in SQL, so the label is selected as grp.
	var raw []struct {
		Grp *string
		StatsFigures
	}
	err := filtered().Select(groupExpr + " AS grp, " + figuresSQL).
		Group(groupExpr).Order("grp ASC").Scan(&raw).Error
	if err != nil {
		return nil, err
	}
	res := &StatsResult{Rows: make([]StatsRow, 0, len(raw))}
	for _, r := range raw {
		row := StatsRow{StatsFigures: r.StatsFigures}
		if r.Grp != nil {
			row.Group = *r.Grp
		}
		res.Rows = append(res.Rows, row)
	}
	if err := filtered().Select(figuresSQL).Scan(&res.Totals).Error; err != nil {
		return nil, err
	}
	return res, nil
}
