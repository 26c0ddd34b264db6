// Package testenv starts the real gateway (app.New behind an httptest.Server)
// for black-box tests, on SQLite and on PostgreSQL. A suite is one call:
//
//	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
//		resp, body := env.Admin("POST", "/admin/projects", map[string]any{"name": "p"})
//		...
//	}, func(c *config.Config) { c.Items.Enabled = false }) // optional overrides
//
// PostgreSQL comes from GATEWAY_TEST_POSTGRES_DSN (default
// "host=127.0.0.1 user=postgres dbname=test sslmode=disable"; "off" disables
// it); each Env gets a fresh database that is dropped afterwards. When no
// server answers, the PostgreSQL variant is skipped with a notice.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for creating test databases
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/llmgw/gateway/app"
	"github.com/llmgw/gateway/config"
)

// MasterKey is the admin credential of every test gateway.
const MasterKey = "sk-admin-test"

// Drivers are the databases every suite runs on.
var Drivers = []string{"sqlite", "postgres"}

// Env is one running gateway.
type Env struct {
	T         testing.TB
	Driver    string // sqlite | postgres
	BaseURL   string
	MasterKey string
	Config    *config.Config
	App       *app.App
	Server    *httptest.Server
	Client    *http.Client
}

// Option changes the config before the gateway starts.
type Option func(*config.Config)

// ForEachDB runs fn as a subtest per database ("sqlite", "postgres"), each
// with its own fresh gateway.
func ForEachDB(t *testing.T, fn func(t *testing.T, env *Env), opts ...Option) {
	t.Helper()
	for _, driver := range Drivers {
		t.Run(driver, func(t *testing.T) {
			fn(t, New(t, driver, opts...))
		})
	}
}

// Config is the test configuration for driver, before the DSN is set.
func Config(driver string) *config.Config {
	c := config.Defaults()
	c.Database.Driver = driver
	c.Admin.MasterKey = MasterKey
	c.Security.EncryptionKey = "test-encryption-key"
	c.Server.Mode = "debug"
	return c
}

// New starts a gateway on driver's database; the PostgreSQL variant skips
// t when no server is reachable. Everything is torn down at t's cleanup.
func New(t testing.TB, driver string, opts ...Option) *Env {
	t.Helper()
	cfg := Config(driver)
	switch driver {
	case "sqlite":
		cfg.Database.DSN = filepath.Join(t.TempDir(), "gateway.db")
	case "postgres":
		cfg.Database.DSN = freshPostgres(t)
	default:
		t.Fatalf("testenv: unknown driver %q", driver)
	}
	for _, o := range opts {
		o(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	log := zap.NewNop()
	if os.Getenv("GATEWAY_TEST_LOG") != "" {
		log = zaptest.NewLogger(t)
	}
	a, err := app.New(cfg, log)
	if err != nil {
		t.Fatalf("testenv: app.New: %v", err)
	}
	srv := httptest.NewServer(a.Handler)
	env := &Env{
		T: t, Driver: driver, BaseURL: srv.URL, MasterKey: cfg.Admin.MasterKey,
		Config: cfg, App: a, Server: srv, Client: srv.Client(),
	}
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Logf("testenv: close: %v", err)
		}
	})
	return env
}

// Do sends a request. body may be nil, a string or []byte (sent as is), or
// any value (sent as JSON). It returns the response (body already read and
// closed) and the body.
func (e *Env) Do(method, path string, body any, headers map[string]string) (*http.Response, []byte) {
	e.T.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.T.Fatalf("testenv: marshal body: %v", err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.BaseURL+path, r)
	if err != nil {
		e.T.Fatalf("testenv: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		e.T.Fatalf("testenv: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatalf("testenv: read %s %s: %v", method, path, err)
	}
	return resp, out
}

// Admin sends a request with the master key.
func (e *Env) Admin(method, path string, body any) (*http.Response, []byte) {
	e.T.Helper()
	return e.Do(method, path, body, map[string]string{"Authorization": "Bearer " + e.MasterKey})
}

// MustAdmin sends an admin request, fails the test unless it answers
// wantStatus, and decodes the JSON object it returned.
func (e *Env) MustAdmin(wantStatus int, method, path string, body any) map[string]any {
	e.T.Helper()
	resp, raw := e.Admin(method, path, body)
	if resp.StatusCode != wantStatus {
		e.T.Fatalf("%s %s: status %d, want %d; body %s", method, path, resp.StatusCode, wantStatus, raw)
	}
	return Object(e.T, raw)
}

// Object decodes a JSON object.
func Object(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, raw)
	}
	return m
}

// ErrorOf returns type, message and details of a gateway error envelope,
// failing the test when raw is not one.
func ErrorOf(t testing.TB, raw []byte) (typ, message string, details map[string]any) {
	t.Helper()
	var env struct {
		Detail struct {
			Error *struct {
				Type    string         `json:"type"`
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Detail.Error == nil || env.Detail.Error.Details == nil {
		t.Fatalf("not a gateway error envelope: %s", raw)
	}
	return env.Detail.Error.Type, env.Detail.Error.Message, env.Detail.Error.Details
}

// FieldReasons maps each details.fields entry of an error envelope to its reason.
func FieldReasons(t testing.TB, raw []byte) map[string]string {
	t.Helper()
	_, _, details := ErrorOf(t, raw)
	out := map[string]string{}
	list, _ := details["fields"].([]any)
	for _, f := range list {
		m, _ := f.(map[string]any)
		name, _ := m["field"].(string)
		reason, _ := m["reason"].(string)
		out[name] = reason
	}
	return out
}

// ---- PostgreSQL ----

var (
	pgOnce   sync.Once
	pgAdmin  *sql.DB
	pgBase   string
	pgReason string
)

// PostgresDSN is the server the PostgreSQL variants use ("" = disabled).
func PostgresDSN() string {
	dsn := os.Getenv("GATEWAY_TEST_POSTGRES_DSN")
	switch dsn {
	case "":
		return "host=127.0.0.1 user=postgres dbname=test sslmode=disable"
	case "off", "none", "0":
		return ""
	}
	return dsn
}

func connectAdmin() {
	pgBase = PostgresDSN()
	if pgBase == "" {
		pgReason = "GATEWAY_TEST_POSTGRES_DSN=off"
		return
	}
	db, err := sql.Open("pgx", pgBase)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = db.PingContext(ctx)
		cancel()
	}
	if err != nil {
		pgReason = err.Error()
		if db != nil {
			_ = db.Close()
		}
		return
	}
	db.SetMaxOpenConns(2)
	pgAdmin = db
}

// freshPostgres creates gw_test_<random> and drops it at cleanup.
func freshPostgres(t testing.TB) string {
	t.Helper()
	pgOnce.Do(connectAdmin)
	if pgAdmin == nil {
		msg := "PostgreSQL not reachable, skipping (" + pgReason + ")"
		fmt.Println(msg)
		t.Skip(msg)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "gw_test_" + hex.EncodeToString(b[:])
	if _, err := pgAdmin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	t.Cleanup(func() {
		// Registered before the app's cleanup, so it runs after the app closed.
		if _, err := pgAdmin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Logf("testenv: drop database %s: %v", name, err)
		}
	})
	return withDBName(pgBase, name)
}

// withDBName points a key=value or URL DSN at another database.
func withDBName(dsn, name string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			u.Path = "/" + name
			return u.String()
		}
	}
	return dsn + " dbname=" + name // a later keyword wins
}
