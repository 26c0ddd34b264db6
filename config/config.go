// Package config is the gateway's one typed configuration tree. Defaults live
// in one place (defaults below), a YAML file overrides them, and GATEWAY_*
// environment variables override the file. It is the only package that
// imports viper; constructors elsewhere receive only their sub-struct.
package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/viper"
)

// DevMasterKey and DevEncryptionKey are the development values shipped in
// config.yaml; start-up warns while either is in use.
const (
	DevMasterKey     = "sk-admin-dev"
	DevEncryptionKey = "dev-encryption-key-change-me"
)

// EnvPrefix is prepended to every environment override (GATEWAY_SERVER_PORT).
const EnvPrefix = "GATEWAY"

// Config is the whole configuration.
type Config struct {
	Server    ServerConfig    `mapstructure:"server"`
	Database  DatabaseConfig  `mapstructure:"database"`
	Admin     AdminConfig     `mapstructure:"admin"`
	Security  SecurityConfig  `mapstructure:"security"`
	Redis     RedisConfig     `mapstructure:"redis"`
	Items     ItemsConfig     `mapstructure:"items"`
	Providers ProvidersConfig `mapstructure:"providers"`
	Circuit   CircuitConfig   `mapstructure:"circuit"`
	Budgets   BudgetsConfig   `mapstructure:"budgets"`
	Usage     UsageConfig     `mapstructure:"usage"`
	Metrics   MetricsConfig   `mapstructure:"metrics"`
	Log       LogConfig       `mapstructure:"log"`
}

// ServerConfig is the HTTP listener.
type ServerConfig struct {
	Port              int           `mapstructure:"port"`
	Mode              string        `mapstructure:"mode"` // release | debug
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	ReadTimeout       time.Duration `mapstructure:"read_timeout"`
	// WriteTimeout is 0 by default because a long stream must not be cut.
	WriteTimeout  time.Duration `mapstructure:"write_timeout"`
	IdleTimeout   time.Duration `mapstructure:"idle_timeout"`
	ShutdownGrace time.Duration `mapstructure:"shutdown_grace"`
	MaxBodyBytes  int64         `mapstructure:"max_body_bytes"`
}

// Addr is the listen address.
func (s ServerConfig) Addr() string { return fmt.Sprintf(":%d", s.Port) }

// DatabaseConfig selects and sizes the database.
type DatabaseConfig struct {
	Driver       string `mapstructure:"driver"` // sqlite | postgres
	DSN          string `mapstructure:"dsn"`
	MaxOpenConns int    `mapstructure:"max_open_conns"`
	MaxIdleConns int    `mapstructure:"max_idle_conns"`
}

// AdminConfig guards /admin.
type AdminConfig struct {
	// MasterKey is the admin credential; "" disables the admin API (401).
	MasterKey string `mapstructure:"master_key"`
}

// SecurityConfig holds the at-rest encryption passphrase.
type SecurityConfig struct {
	EncryptionKey string `mapstructure:"encryption_key"`
}

// RedisConfig enables shared limits across instances.
type RedisConfig struct {
	URL string `mapstructure:"url"` // "" = in-process limits
	// FailOpen lets requests through when Redis is unreachable.
	FailOpen bool `mapstructure:"fail_open"`
}

// ItemsConfig switches the item service route group.
type ItemsConfig struct {
	Enabled bool `mapstructure:"enabled"`
}

// ProvidersConfig tunes upstream calls.
type ProvidersConfig struct {
	Timeout             time.Duration `mapstructure:"timeout"` // whole call
	ConnectTimeout      time.Duration `mapstructure:"connect_timeout"`
	FirstByteTimeout    time.Duration `mapstructure:"first_byte_timeout"`
	StreamIdleTimeout   time.Duration `mapstructure:"stream_idle_timeout"`
	MaxIdleConnsPerHost int           `mapstructure:"max_idle_conns_per_host"`
	Retries             int           `mapstructure:"retries"`
	RetryBackoff        time.Duration `mapstructure:"retry_backoff"`
	RetryAfterCap       time.Duration `mapstructure:"retry_after_cap"`
}

// CircuitConfig is the per-provider circuit breaker.
type CircuitConfig struct {
	FailureThreshold   int           `mapstructure:"failure_threshold"`
	ErrorRateThreshold float64       `mapstructure:"error_rate_threshold"`
	MinRequests        int           `mapstructure:"min_requests"`
	Window             time.Duration `mapstructure:"window"`
	Cooldown           time.Duration `mapstructure:"cooldown"`
}

// BudgetsConfig tunes budget reservations.
type BudgetsConfig struct {
	// DefaultReserveTokens is the output estimate when a request has no max_tokens.
	DefaultReserveTokens int `mapstructure:"default_reserve_tokens"`
}

// UsageConfig sizes the asynchronous usage writer.
type UsageConfig struct {
	QueueSize     int           `mapstructure:"queue_size"`
	BatchSize     int           `mapstructure:"batch_size"`
	FlushInterval time.Duration `mapstructure:"flush_interval"`
}

// MetricsConfig switches GET /metrics.
type MetricsConfig struct {
	Enabled bool `mapstructure:"enabled"`
}

// LogConfig shapes the zap logger.
type LogConfig struct {
	Level  string `mapstructure:"level"`  // debug | info | warn | error
	Format string `mapstructure:"format"` // json | console; "" = json in release, console in debug
}

// defaults is the one place every default lives. Every key must appear here:
// viper only applies an env override to a key it knows about.
var defaults = map[string]any{
	"server.port":                       8080,
	"server.mode":                       "release",
	"server.read_header_timeout":        "5s",
	"server.read_timeout":               "60s",
	"server.write_timeout":              "0s",
	"server.idle_timeout":               "120s",
	"server.shutdown_grace":             "30s",
	"server.max_body_bytes":             10 << 20,
	"database.driver":                   "sqlite",
	"database.dsn":                      "gateway.db",
	"database.max_open_conns":           20,
	"database.max_idle_conns":           10,
	"admin.master_key":                  "",
	"security.encryption_key":           "",
	"redis.url":                         "",
	"redis.fail_open":                   true,
	"items.enabled":                     true,
	"providers.timeout":                 "120s",
	"providers.connect_timeout":         "10s",
	"providers.first_byte_timeout":      "60s",
	"providers.stream_idle_timeout":     "60s",
	"providers.max_idle_conns_per_host": 256,
	"providers.retries":                 1,
	"providers.retry_backoff":           "200ms",
	"providers.retry_after_cap":         "5s",
	"circuit.failure_threshold":         5,
	"circuit.error_rate_threshold":      0.5,
	"circuit.min_requests":              20,
	"circuit.window":                    "60s",
	"circuit.cooldown":                  "30s",
	"budgets.default_reserve_tokens":    1024,
	"usage.queue_size":                  10000,
	"usage.batch_size":                  500,
	"usage.flush_interval":              "500ms",
	"metrics.enabled":                   true,
	"log.level":                         "info",
	"log.format":                        "",
}

// Keys lists every configuration key, sorted as in Config (docs, tests).
func Keys() []string {
	out := make([]string, 0, len(defaults))
	walkKeys(reflect.TypeOf(Config{}), "", &out)
	return out
}

func walkKeys(t reflect.Type, prefix string, out *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := prefix + f.Tag.Get("mapstructure")
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Time{}) {
			walkKeys(f.Type, name+".", out)
			continue
		}
		*out = append(*out, name)
	}
}

// EnvVar is the environment variable that overrides key.
func EnvVar(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Default returns the default of key as written in the defaults table.
func Default(key string) any { return defaults[key] }

// Defaults returns a Config holding only the defaults, ignoring the
// environment (tests, embedding).
func Defaults() *Config {
	c, err := load(newViper(false))
	if err != nil {
		panic("config: defaults do not decode: " + err.Error()) // a programming error
	}
	return c
}

func newViper(env bool) *viper.Viper {
	v := viper.New()
	for k, d := range defaults {
		v.SetDefault(k, d)
	}
	if !env {
		return v
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	return v
}

// Load reads the YAML file at path ("" = none: defaults and env only), applies
// GATEWAY_* environment overrides and validates the result. Every error is one
// line naming the key.
func Load(path string) (*Config, error) {
	v := newViper(true)
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("config: cannot read %s: %w", path, err)
		}
		v.SetConfigFile(path)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config: %s is not valid YAML: %s", path, oneLine(err))
		}
	}
	c, err := load(v)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func load(v *viper.Viper) (*Config, error) {
	var c Config
	// UnmarshalExact turns a misspelt key in the file into an error instead
	// of a silently ignored setting.
	if err := v.UnmarshalExact(&c); err != nil {
		return nil, fmt.Errorf("config: %s", oneLine(err))
	}
	c.resolve()
	return &c, nil
}

// resolve fills values whose default depends on another value.
func (c *Config) resolve() {
	c.Server.Mode = strings.ToLower(strings.TrimSpace(c.Server.Mode))
	c.Database.Driver = strings.ToLower(strings.TrimSpace(c.Database.Driver))
	c.Log.Level = strings.ToLower(strings.TrimSpace(c.Log.Level))
	c.Log.Format = strings.ToLower(strings.TrimSpace(c.Log.Format))
	if c.Log.Format == "" {
		c.Log.Format = "json"
		if c.Server.Mode == "debug" {
			c.Log.Format = "console"
		}
	}
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", "; ")
	s = strings.Join(strings.Fields(s), " ")
	return s
}

// Validate checks every value; the error names the first bad key.
func (c *Config) Validate() error {
	checks := []error{
		between("server.port", c.Server.Port, 1, 65535),
		oneOf("server.mode", c.Server.Mode, "release", "debug"),
		positive("server.read_header_timeout", c.Server.ReadHeaderTimeout),
		nonNegative("server.read_timeout", c.Server.ReadTimeout),
		nonNegative("server.write_timeout", c.Server.WriteTimeout),
		nonNegative("server.idle_timeout", c.Server.IdleTimeout),
		nonNegative("server.shutdown_grace", c.Server.ShutdownGrace),
		atLeast("server.max_body_bytes", c.Server.MaxBodyBytes, 1),
		oneOf("database.driver", c.Database.Driver, "sqlite", "postgres"),
		notEmpty("database.dsn", c.Database.DSN),
		atLeast("database.max_open_conns", c.Database.MaxOpenConns, 1),
		atLeast("database.max_idle_conns", c.Database.MaxIdleConns, 0),
		notEmpty("security.encryption_key", c.Security.EncryptionKey),
		redisURL(c.Redis.URL),
		positive("providers.timeout", c.Providers.Timeout),
		positive("providers.connect_timeout", c.Providers.ConnectTimeout),
		positive("providers.first_byte_timeout", c.Providers.FirstByteTimeout),
		positive("providers.stream_idle_timeout", c.Providers.StreamIdleTimeout),
		atLeast("providers.max_idle_conns_per_host", c.Providers.MaxIdleConnsPerHost, 1),
		between("providers.retries", c.Providers.Retries, 0, 10),
		nonNegative("providers.retry_backoff", c.Providers.RetryBackoff),
		nonNegative("providers.retry_after_cap", c.Providers.RetryAfterCap),
		atLeast("circuit.failure_threshold", c.Circuit.FailureThreshold, 1),
		fraction("circuit.error_rate_threshold", c.Circuit.ErrorRateThreshold),
		atLeast("circuit.min_requests", c.Circuit.MinRequests, 1),
		positive("circuit.window", c.Circuit.Window),
		positive("circuit.cooldown", c.Circuit.Cooldown),
		atLeast("budgets.default_reserve_tokens", c.Budgets.DefaultReserveTokens, 1),
		atLeast("usage.queue_size", c.Usage.QueueSize, 1),
		atLeast("usage.batch_size", c.Usage.BatchSize, 1),
		positive("usage.flush_interval", c.Usage.FlushInterval),
		oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "json", "console"),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// Warnings are start-up notices about insecure but valid settings.
func (c *Config) Warnings() []string {
	var w []string
	switch c.Admin.MasterKey {
	case "":
		w = append(w, "no admin master key is set: every /admin call answers 401; set admin.master_key in the config file or "+EnvVar("admin.master_key"))
	case DevMasterKey:
		w = append(w, "the development admin master key is in use: set admin.master_key or "+EnvVar("admin.master_key")+" before exposing this server")
	}
	if c.Security.EncryptionKey == DevEncryptionKey {
		w = append(w, "the development encryption key is in use: provider api keys are sealed with a public passphrase; set security.encryption_key or "+EnvVar("security.encryption_key"))
	}
	return w
}

func invalid(key, rule string, got any) error {
	return fmt.Errorf("config: %s %s, got %v", key, rule, got)
}

func between[T int | int64](key string, v, lo, hi T) error {
	if v < lo || v > hi {
		return invalid(key, fmt.Sprintf("must be %d..%d", lo, hi), v)
	}
	return nil
}

func atLeast[T int | int64](key string, v, lo T) error {
	if v < lo {
		return invalid(key, fmt.Sprintf("must be >= %d", lo), v)
	}
	return nil
}

func positive(key string, d time.Duration) error {
	if d <= 0 {
		return invalid(key, "must be a positive duration such as \"30s\"", d)
	}
	return nil
}

func nonNegative(key string, d time.Duration) error {
	if d < 0 {
		return invalid(key, "must not be negative", d)
	}
	return nil
}

func fraction(key string, f float64) error {
	if f <= 0 || f > 1 {
		return invalid(key, "must be in (0, 1]", f)
	}
	return nil
}

func notEmpty(key, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("config: %s must be set (or %s)", key, EnvVar(key))
	}
	return nil
}

func oneOf(key, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return invalid(key, "must be one of "+strings.Join(allowed, "|"), fmt.Sprintf("%q", v))
}

func redisURL(u string) error {
	if u == "" {
		return nil
	}
	if !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") && !strings.HasPrefix(u, "unix://") {
		// The value is not echoed: a Redis URL may carry a password.
		return errors.New("config: redis.url must be a redis://, rediss:// or unix:// URL (or empty for in-process limits)")
	}
	return nil
}
