package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimal = "security:\n  encryption_key: k\n"

func TestDefaults(t *testing.T) {
	c, err := Load(writeFile(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]any{
		"server.port":          {c.Server.Port, 8080},
		"server.mode":          {c.Server.Mode, "release"},
		"server.write_timeout": {c.Server.WriteTimeout, time.Duration(0)},
		"server.idle_timeout":  {c.Server.IdleTimeout, 120 * time.Second},
		"server.max_body":      {c.Server.MaxBodyBytes, int64(10485760)},
		"database.driver":      {c.Database.Driver, "sqlite"},
		"database.dsn":         {c.Database.DSN, "gateway.db"},
		"redis.fail_open":      {c.Redis.FailOpen, true},
		"items.enabled":        {c.Items.Enabled, true},
		"providers.backoff":    {c.Providers.RetryBackoff, 200 * time.Millisecond},
		"circuit.rate":         {c.Circuit.ErrorRateThreshold, 0.5},
		"usage.flush_interval": {c.Usage.FlushInterval, 500 * time.Millisecond},
		"log.format":           {c.Log.Format, "json"},
	}
	for name, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %v, want %v", name, v[0], v[1])
		}
	}
}

// Every key of the struct has a default, so viper knows it and applies its
// environment override even when the file does not mention it.
func TestEveryKeyHasDefault(t *testing.T) {
	keys := Keys()
	if len(keys) != len(defaults) {
		t.Errorf("%d struct keys, %d defaults", len(keys), len(defaults))
	}
	for _, k := range keys {
		if _, ok := defaults[k]; !ok {
			t.Errorf("key %s has no default", k)
		}
	}
}

func TestEnvOverridesKeysAbsentFromFile(t *testing.T) {
	t.Setenv("GATEWAY_SERVER_PORT", "9090")
	t.Setenv("GATEWAY_DATABASE_DRIVER", "postgres")
	t.Setenv("GATEWAY_DATABASE_DSN", "host=db")
	t.Setenv("GATEWAY_ADMIN_MASTER_KEY", "sk-admin-x")
	t.Setenv("GATEWAY_REDIS_URL", "redis://127.0.0.1:6379/0")
	t.Setenv("GATEWAY_ITEMS_ENABLED", "false")
	t.Setenv("GATEWAY_CIRCUIT_COOLDOWN", "45s")
	t.Setenv("GATEWAY_CIRCUIT_ERROR_RATE_THRESHOLD", "0.25")
	t.Setenv("GATEWAY_SERVER_MODE", "debug")
	c, err := Load(writeFile(t, minimal+"server:\n  port: 7000\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Port != 9090 || c.Database.Driver != "postgres" || c.Database.DSN != "host=db" ||
		c.Admin.MasterKey != "sk-admin-x" || c.Redis.URL != "redis://127.0.0.1:6379/0" || c.Items.Enabled ||
		c.Circuit.Cooldown != 45*time.Second || c.Circuit.ErrorRateThreshold != 0.25 {
		t.Fatalf("env not applied: %+v", c)
	}
	if c.Log.Format != "console" {
		t.Errorf("debug mode: log.format %q, want console", c.Log.Format)
	}
}

func TestEnvWithoutFile(t *testing.T) {
	t.Setenv("GATEWAY_SECURITY_ENCRYPTION_KEY", "x")
	t.Setenv("GATEWAY_USAGE_BATCH_SIZE", "7")
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Usage.BatchSize != 7 {
		t.Fatalf("batch size %d", c.Usage.BatchSize)
	}
}

func TestInvalidValuesNameTheKey(t *testing.T) {
	cases := []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"port zero", minimal + "server:\n  port: 0\n", nil, "config: server.port must be 1..65535, got 0"},
		{"port too big", minimal, map[string]string{"GATEWAY_SERVER_PORT": "70000"}, "config: server.port must be 1..65535, got 70000"},
		{"port not a number", minimal, map[string]string{"GATEWAY_SERVER_PORT": "abc"}, "server.port"},
		{"bad duration", minimal + "server:\n  idle_timeout: soon\n", nil, "server.idle_timeout"},
		{"bad driver", minimal, map[string]string{"GATEWAY_DATABASE_DRIVER": "mysql"}, `config: database.driver must be one of sqlite|postgres, got "mysql"`},
		{"bad mode", minimal + "server:\n  mode: fast\n", nil, "server.mode"},
		{"no encryption key", "", nil, "security.encryption_key must be set"},
		{"bad redis url", minimal, map[string]string{"GATEWAY_REDIS_URL": "http://x"}, "redis.url"},
		{"negative timeout", minimal + "providers:\n  timeout: -1s\n", nil, "providers.timeout"},
		{"rate above 1", minimal + "circuit:\n  error_rate_threshold: 2\n", nil, "circuit.error_rate_threshold"},
		{"unknown key", minimal + "server:\n  prot: 1\n", nil, "prot"},
		{"bad bool", minimal, map[string]string{"GATEWAY_ITEMS_ENABLED": "perhaps"}, "items.enabled"},
		{"bad log level", minimal + "log:\n  level: loud\n", nil, "log.level"},
		{"not yaml", "server: [", nil, "not valid YAML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeFile(t, tc.file))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope.yaml")); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Fatalf("got %v", err)
	}
}

// The shipped config.yaml loads, documents every key and carries the
// development credentials the warnings are about.
func TestShippedConfig(t *testing.T) {
	c, err := Load("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Admin.MasterKey != DevMasterKey || c.Security.EncryptionKey != DevEncryptionKey {
		t.Fatalf("dev credentials: %q %q", c.Admin.MasterKey, c.Security.EncryptionKey)
	}
	if len(c.Warnings()) != 2 {
		t.Errorf("warnings: %v", c.Warnings())
	}
	v := viper.New()
	v.SetConfigFile("../config.yaml")
	if err := v.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		if !v.InConfig(k) {
			t.Errorf("config.yaml does not document %s", k)
		}
	}
}

func TestWarnings(t *testing.T) {
	c := Defaults()
	c.Security.EncryptionKey = "real"
	w := c.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "GATEWAY_ADMIN_MASTER_KEY") {
		t.Fatalf("no master key: %v", w)
	}
	c.Admin.MasterKey = "sk-real"
	if w := c.Warnings(); len(w) != 0 {
		t.Fatalf("clean config: %v", w)
	}
}

func TestEnvVar(t *testing.T) {
	if got := EnvVar("providers.max_idle_conns_per_host"); got != "GATEWAY_PROVIDERS_MAX_IDLE_CONNS_PER_HOST" {
		t.Fatal(got)
	}
}
