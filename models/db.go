package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/llmgw/gateway/config"
)

// Sentinel errors every store returns, whatever the driver said.
var (
	// ErrNotFound: no row with that id (or name).
	ErrNotFound = errors.New("models: not found")
	// ErrDuplicate: a unique column (name, alias, key hash, request id) already holds the value.
	ErrDuplicate = errors.New("models: duplicate")
	// ErrInUse: the row is still referenced (a provider by an alias, a project by a key).
	ErrInUse = errors.New("models: in use")
)

// Open connects to the configured database. SQLite gets WAL (readers do not
// block the writer), a busy timeout (writers queue instead of failing with
// SQLITE_BUSY), immediate write transactions (no lock-upgrade deadlocks) and
// foreign keys. Every timestamp GORM writes is UTC.
func Open(cfg config.DatabaseConfig) (*gorm.DB, error) {
	var dial gorm.Dialector
	switch cfg.Driver {
	case "sqlite":
		dial = sqlite.Open(sqliteDSN(cfg.DSN))
	case "postgres":
		dial = postgres.Open(cfg.DSN)
	default:
		return nil, fmt.Errorf("models: unknown database driver %q (want sqlite or postgres)", cfg.Driver)
	}
	db, err := gorm.Open(dial, &gorm.Config{
		Logger:                 logger.Discard,
		NowFunc:                func() time.Time { return time.Now().UTC() },
		SkipDefaultTransaction: true, // stores open their own transactions where it matters
		TranslateError:         true,
	})
	if err != nil {
		return nil, fmt.Errorf("models: open %s: %w", cfg.Driver, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if cfg.MaxOpenConns > 0 {
		sqlDB.SetMaxOpenConns(cfg.MaxOpenConns)
	}
	sqlDB.SetMaxIdleConns(cfg.MaxIdleConns)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("models: cannot reach the %s database: %w", cfg.Driver, err)
	}
	return db, nil
}

// sqliteDSN adds the pragmas the gateway relies on unless the DSN sets them.
func sqliteDSN(dsn string) string {
	params := []string{"_journal_mode=WAL", "_busy_timeout=10000", "_foreign_keys=on", "_txlock=immediate", "_synchronous=NORMAL"}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	for _, p := range params {
		name := p[:strings.Index(p, "=")]
		if strings.Contains(dsn, name+"=") {
			continue
		}
		dsn += sep + p
		sep = "&"
	}
	return dsn
}

// Migrate creates or updates every table and the catalog version row.
func Migrate(db *gorm.DB) error {
	if err := db.AutoMigrate(&Provider{}, &Project{}, &APIKey{}, &ModelAlias{}, &UsageRecord{}, &Item{}, &CatalogState{}); err != nil {
		return fmt.Errorf("models: migrate: %w", err)
	}
	// FirstOrCreate is safe to race: two instances starting together both
	// try, the loser hits the primary key and the row exists either way.
	err := db.Where(CatalogState{ID: 1}).FirstOrCreate(&CatalogState{ID: 1}).Error
	if err != nil && !isDuplicate(err) {
		return fmt.Errorf("models: create catalog state: %w", err)
	}
	return nil
}

// Ping checks the database answers within ctx.
func Ping(ctx context.Context, db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Close releases the connection pool.
func Close(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// mapErr turns driver errors into the package sentinels.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrRecordNotFound):
		return ErrNotFound
	case isDuplicate(err):
		return fmt.Errorf("%w: %v", ErrDuplicate, err)
	}
	return err
}

func isDuplicate(err error) bool {
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return true
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505" // unique_violation
	}
	return false
}

// CatalogVersion reads the version every admin write bumps.
func CatalogVersion(ctx context.Context, db *gorm.DB) (int64, error) {
	var st CatalogState
	err := db.WithContext(ctx).Where("id = ?", 1).Limit(1).Find(&st).Error
	return st.Version, err
}

// writeTx runs fn in a transaction that also bumps the catalog version, so
// every instance's catalog poller sees the change with one cheap query.
func writeTx(ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) error) error {
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Model(&CatalogState{}).Where("id = ?", 1).
			UpdateColumn("version", gorm.Expr("version + 1")).Error
	})
	return mapErr(err)
}

// Page selects one page of a list.
type Page struct {
	Page     int // 1-based
	PageSize int
}

func (p Page) apply(q *gorm.DB) *gorm.DB {
	if p.PageSize <= 0 {
		return q
	}
	page := p.Page
	if page < 1 {
		page = 1
	}
	return q.Limit(p.PageSize).Offset((page - 1) * p.PageSize)
}

// newestFirst is the order of every admin list; the id breaks ties between
// rows created in the same instant so pages never overlap.
const newestFirst = "created_at DESC, id DESC"

// list counts the filtered rows and reads one page of them.
func list[T any](ctx context.Context, db *gorm.DB, p Page, filter func(*gorm.DB) *gorm.DB) ([]T, int64, error) {
	var total int64
	var model T
	q := filter(db.WithContext(ctx).Model(&model))
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	out := []T{}
	if err := p.apply(filter(db.WithContext(ctx).Model(&model))).Order(newestFirst).Find(&out).Error; err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

func first[T any](ctx context.Context, db *gorm.DB, where string, args ...any) (*T, error) {
	var out T
	if err := db.WithContext(ctx).Where(where, args...).First(&out).Error; err != nil {
		return nil, mapErr(err)
	}
	return &out, nil
}

// updateRow writes every column but id and created_at of row; ErrNotFound
// when no row has its id.
func updateRow(tx *gorm.DB, row any, id string) error {
	res := tx.Model(row).Where("id = ?", id).Select("*").Omit("id", "created_at").Updates(row)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

func deleteRow(tx *gorm.DB, model any, id string) error {
	res := tx.Where("id = ?", id).Delete(model)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}
