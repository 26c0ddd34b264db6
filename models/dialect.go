package models

import (
	"fmt"

	"gorm.io/gorm"
)

// This file holds the few SQL differences between SQLite and PostgreSQL.
// Timestamps are stored in UTC on both: SQLite keeps them as text
// ("2026-11-22 10:04:05.123+00:00"), PostgreSQL as timestamptz.

// Bucket is a time grouping of usage statistics.
type Bucket string

const (
	BucketHour Bucket = "hour" // 2026-11-22T10:00:00Z
	BucketDay  Bucket = "day"  // 2026-11-22
)

// timeBucketExpr is the SQL expression that renders created_at as the
// contract's group label for b.
func timeBucketExpr(db *gorm.DB, b Bucket) (string, error) {
	dialect := db.Dialector.Name()
	switch {
	case dialect == "sqlite" && b == BucketHour:
		return "strftime('%Y-%m-%dT%H:00:00Z', created_at)", nil
	case dialect == "sqlite" && b == BucketDay:
		return "strftime('%Y-%m-%d', created_at)", nil
	case dialect == "postgres" && b == BucketHour:
		return `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:00:00"Z"')`, nil
	case dialect == "postgres" && b == BucketDay:
		return `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`, nil
	}
	return "", fmt.Errorf("models: no %s time bucket for dialect %s", b, dialect)
}
