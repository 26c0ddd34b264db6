package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// UsageStore persists usage records and answers the statistics queries.
type UsageStore struct{ db *gorm.DB }

// usageInsertColumns are the columns InsertBatch writes, in the order
// usageInsertArgs appends the values.
var usageInsertColumns = []string{"request_id", "key_id", "project_id", "model", "provider", "upstream_model",
	"input_tokens", "output_tokens", "total_tokens", "cost", "latency_ms", "status", "error_type", "stream", "attempts", "created_at"}

// insertChunk keeps one INSERT well under SQLite's and PostgreSQL's bound
// parameter limits (16 columns × 200 rows).
const insertChunk = 200

var (
	usageInsertHead = "INSERT INTO usage_records (" + strings.Join(usageInsertColumns, ", ") + ") VALUES "
	usageInsertRow  = "(" + strings.Repeat("?,", len(usageInsertColumns)-1) + "?)"
)

func usageInsertArgs(args []any, r *UsageRecord) []any {
	return append(args, r.RequestID, r.KeyID, r.ProjectID, r.Model, r.Provider, r.UpstreamModel,
		r.InputTokens, r.OutputTokens, r.TotalTokens, r.Cost, r.LatencyMS, r.Status, r.ErrorType, r.Stream, r.Attempts,
		utc(r.CreatedAt))
}

// InsertBatch writes records; one whose request_id is already stored is
// skipped, so a batch retried after a lost acknowledgement is not counted twice.
//
// It is one multi-row INSERT per chunk written by hand rather than gorm's
// Create: Create reflects over every record and reads the new ids back
// (RETURNING), which was the largest single cost of a model call under load,
// and nothing needs those ids.
func (s *UsageStore) InsertBatch(ctx context.Context, recs []UsageRecord) error {
	if len(recs) == 0 {
		return nil
	}
	now := time.Now()
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var sql strings.Builder
		args := make([]any, 0, len(usageInsertColumns)*min(len(recs), insertChunk))
		for start := 0; start < len(recs); start += insertChunk {
			chunk := recs[start:min(start+insertChunk, len(recs))]
			sql.Reset()
			sql.WriteString(usageInsertHead)
			args = args[:0]
			for i := range chunk {
				if i > 0 {
					sql.WriteByte(',')
				}
				sql.WriteString(usageInsertRow)
				r := &chunk[i]
				if r.CreatedAt.IsZero() {
					r.CreatedAt = now
				}
				args = usageInsertArgs(args, r)
			}
			sql.WriteString(" ON CONFLICT (request_id) DO NOTHING")
			if err := tx.Exec(sql.String(), args...).Error; err != nil {
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
