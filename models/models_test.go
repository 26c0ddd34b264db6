package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmgw/gateway/config"
	"gorm.io/gorm"
)

// testDBs opens a fresh SQLite file and, when reachable, a fresh PostgreSQL
// schema-less database; every dialect-sensitive test runs on both.
func testDBs(t *testing.T) map[string]*gorm.DB {
	t.Helper()
	out := map[string]*gorm.DB{}
	db, err := Open(config.DatabaseConfig{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "t.db"), MaxOpenConns: 4, MaxIdleConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Close(db) })
	out["sqlite"] = db
	if pg := openPostgres(t); pg != nil {
		out["postgres"] = pg
	}
	return out
}

func openPostgres(t *testing.T) *gorm.DB {
	dsn := os.Getenv("GATEWAY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "host=127.0.0.1 user=postgres dbname=test sslmode=disable"
	}
	admin, err := Open(config.DatabaseConfig{Driver: "postgres", DSN: dsn, MaxOpenConns: 2})
	if err != nil {
		t.Logf("PostgreSQL not reachable, skipping its variant: %v", err)
		return nil
	}
	name := fmt.Sprintf("gw_models_%d", time.Now().UnixNano())
	if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatal(err)
	}
	db, err := Open(config.DatabaseConfig{Driver: "postgres", DSN: dsn + " dbname=" + name, MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = Close(db)
		_ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").Error
		_ = Close(admin)
	})
	return db
}

func TestStoresOnBothDialects(t *testing.T) {
	for name, db := range testDBs(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := NewStores(db)
			v0, err := s.CatalogVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p := &Provider{ID: "p1", Name: "openai", Type: "openai", APIBase: "https://x", Enabled: true}
			if err := s.Providers.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			if err := s.Providers.Create(ctx, &Provider{ID: "p2", Name: "openai", Type: "openai", APIBase: "https://x"}); !errors.Is(err, ErrDuplicate) {
				t.Fatalf("duplicate name: got %v", err)
			}
			if _, err := s.Providers.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing: got %v", err)
			}
			if v1, _ := s.CatalogVersion(ctx); v1 != v0+1 {
				t.Fatalf("version %d after one write from %d", v1, v0)
			}
			a := &ModelAlias{ID: "a1", Alias: "fast", RoutingType: "fallback", Enabled: true,
				RoutingConfig: RoutingConfig{Chain: []RouteTarget{{Provider: "openai", Model: "m"}}}}
			if err := s.Aliases.Create(ctx, a); err != nil {
				t.Fatal(err)
			}
			var mp *MissingProvidersError
			if err := s.Aliases.Create(ctx, &ModelAlias{ID: "a2", Alias: "x", Provider: "ghost", Model: "m"}); !errors.As(err, &mp) {
				t.Fatalf("missing provider: got %v", err)
			}
			if err := s.Providers.Delete(ctx, "p1"); !errors.Is(err, ErrInUse) {
				t.Fatalf("delete in use: got %v", err)
			}
			got, err := s.Aliases.GetByRef(ctx, "fast")
			if err != nil || got.ID != "a1" || got.RoutingConfig.Chain[0].Model != "m" {
				t.Fatalf("by name: %+v %v", got, err)
			}
			if err := s.Keys.Create(ctx, &APIKey{ID: "k1", Name: "k", KeyHash: "h", KeyPrefix: "sk-gw-", ProjectID: ptr("nope")}); !errors.Is(err, ErrNoProject) {
				t.Fatalf("missing project: got %v", err)
			}

			day := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
			recs := []UsageRecord{
				{RequestID: "r1", KeyID: "k1", Provider: "openai", Model: "fast", InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Cost: 0.5, LatencyMS: 100, Status: 200, CreatedAt: day},
				{RequestID: "r2", KeyID: "k1", Provider: "openai", Model: "fast", Status: 502, LatencyMS: 300, CreatedAt: day.Add(time.Hour)},
				{RequestID: "r3", KeyID: "k2", Provider: "anth", Model: "slow", InputTokens: 1, OutputTokens: 1, TotalTokens: 2, Cost: 0.25, LatencyMS: 50, Status: 200, CreatedAt: day.Add(24 * time.Hour).In(time.FixedZone("x", 3600))},
			}
			if err := s.Usage.InsertBatch(ctx, recs); err != nil {
				t.Fatal(err)
			}
			if err := s.Usage.InsertBatch(ctx, recs[:1]); err != nil { // replay: skipped
				t.Fatal(err)
			}
			// Every column InsertBatch writes reads back as written.
			full := UsageRecord{RequestID: "r-full", KeyID: "k9", ProjectID: "p9", Model: "alias-x", Provider: "prov",
				UpstreamModel: "up-model", InputTokens: 11, OutputTokens: 22, TotalTokens: 33, Cost: 1.25, LatencyMS: 444,
				Status: 429, ErrorType: "rate_limit_error", Stream: true, Attempts: 3, CreatedAt: day.Add(-48 * time.Hour)}
			if err := s.Usage.InsertBatch(ctx, []UsageRecord{full}); err != nil {
				t.Fatal(err)
			}
			var back UsageRecord
			if err := db.Where("request_id = ?", "r-full").First(&back).Error; err != nil {
				t.Fatal(err)
			}
			if back.ID == 0 {
				t.Fatal("inserted record has no id")
			}
			back.ID = 0
			back.CreatedAt = back.CreatedAt.UTC()
			if back != full {
				t.Fatalf("round trip:\n got %+v\nwant %+v", back, full)
			}
			sum, err := s.Usage.SumCost(ctx, "key_id", "k1", day.Add(-time.Hour))
			if err != nil || sum != 0.5 {
				t.Fatalf("sum %v %v", sum, err)
			}
			start := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
			for _, tc := range []struct {
				g      StatsGroup
				groups []string
			}{
				{GroupHour, []string{"2026-11-22T10:00:00Z", "2026-11-22T11:00:00Z", "2026-11-23T10:00:00Z"}},
				{GroupDay, []string{"2026-11-22", "2026-11-23"}},
				{GroupProvider, []string{"anth", "openai"}},
				{GroupModel, []string{"fast", "slow"}},
				{GroupKey, []string{"k1", "k2"}},
			} {
				res, err := s.Usage.Stats(ctx, StatsQuery{Start: start, End: start.Add(48 * time.Hour), GroupBy: tc.g})
				if err != nil {
					t.Fatal(err)
				}
				var groups []string
				for _, r := range res.Rows {
					groups = append(groups, r.Group)
				}
				if fmt.Sprint(groups) != fmt.Sprint(tc.groups) {
					t.Fatalf("%s: groups %v, want %v", tc.g, groups, tc.groups)
				}
				tot := res.Totals
				if tot.Requests != 3 || tot.Errors != 1 || tot.TotalTokens != 17 || tot.Cost != 0.75 || tot.AvgLatencyMS != 150 {
					t.Fatalf("%s: totals %+v", tc.g, tot)
				}
			}
			res, err := s.Usage.Stats(ctx, StatsQuery{Start: start, End: start.Add(24 * time.Hour), GroupBy: GroupDay, KeyID: "k1"})
			if err != nil || len(res.Rows) != 1 || res.Rows[0].Requests != 2 || res.Rows[0].Errors != 1 {
				t.Fatalf("filtered: %+v %v", res, err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
