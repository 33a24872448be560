package main

import (
	"time"

	"bytes"
	"errors"
	"flag"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/gate/contact"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := parseConfig("serve", nil, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, config{
		Lifecycle: defaultLifecycle,
		Addr:      "127.0.0.1:8080",
		DataDir:   "./data",
		Mode:      "test",
		LogFormat: "text",
		LogLevel:  slog.LevelInfo,
		ReadLimit: 600, WriteLimit: 60, JobConcurrency: 4, CanaryRate: 200, GroupCommitAuto: true,
		ConnectTimeout: 5 * time.Second, StatementTimeout: 20 * time.Second, RequestTimeout: 30 * time.Second,
		Gate: defaultGate, Scoring: defaultScoring, Guard: defaultGuard,
	}, cfg)
	assert.Equal(t, filepath.Join("data", "xpromo.db"), cfg.sqlitePath())
}

// defaultGate is the gate's configuration with no setting given: no
// counterpart but RDAP through IANA's bootstrap file.
var defaultGate = assembly.GateConfig{SMTP: contact.SMTPConfig{TLS: contact.TLSStartTLS},
	MaxDownloadBytes: 1 << 30, ClamdMaxStreamBytes: 100 << 20, DownloadTimeout: 10 * time.Minute, Budget: 15 * time.Minute}

// defaultScoring is the scoring job's configuration with no setting given:
// no model, Apple's lookup for the US storefront, a weekly review.
var defaultScoring = assembly.ScoringConfig{StoreCountry: "us", Period: 7 * 24 * time.Hour, CanaryMinServed: 5}

// The scoring job's settings: read and checked.
func TestConfigScoring(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"--model-base-url", "http://127.0.0.1:11434/v1", "--model", "llama3.1", "--store-country", "DE", "--scoring-period", "24h", "--model-no-json-mode", "true"},
		envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, assembly.ScoringConfig{ModelBaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1", ModelNoJSONMode: true, StoreCountry: "de", Period: 24 * time.Hour, CanaryMinServed: 5}, cfg.Scoring)
	for _, args := range [][]string{
		{"--model-base-url", "https://api.openai.com/v1"}, {"--model", "gpt-4o-mini"}, {"--store-country", "usa"},
		{"--scoring-period", "5m"}, {"--scoring-period", "weekly"}, {"--model-no-json-mode", "maybe"},
	} {
		_, err := parseConfig("serve", args, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
		var u *usageError
		assert.ErrorAs(t, err, &u, "%v", args)
	}
}

// The gate's settings: read, checked, and live mode's requirements named.
func TestConfigGate(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"--smtp-host", "mail.example.com", "--smtp-from", "xpromo <verify@example.com>", "--smtp-tls", "implicit",
		"--clamd-address", "unix:///run/clamav/clamd.ctl", "--gate-roots-file", "/etc/xpromo/roots.pem", "--gate-max-download", "1000", "--gate-download-timeout", "1m", "--gate-job-budget", "2m"},
		envMap(map[string]string{"XPROMO_SMTP_PASSWORD": "pw", "XPROMO_RDAP_BOOTSTRAP_FILE": "/srv/dns.json"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, assembly.GateConfig{RootsFile: "/etc/xpromo/roots.pem", ClamdAddress: "unix:///run/clamav/clamd.ctl", RDAPBootstrapFile: "/srv/dns.json",
		SMTP:             contact.SMTPConfig{Host: "mail.example.com", TLS: contact.TLSImplicit, Password: "pw", From: "xpromo <verify@example.com>"},
		MaxDownloadBytes: 1000, ClamdMaxStreamBytes: 100 << 20, DownloadTimeout: time.Minute, Budget: 2 * time.Minute}, cfg.Gate)

	for _, bad := range [][]string{
		{"--smtp-tls", "ssl"}, {"--smtp-port", "70000"}, {"--smtp-host", "mail.example.com"}, {"--gate-max-download", "0"},
		{"--gate-download-timeout", "soon"}, {"--clamd-max-stream", "-1"}, {"--gate-job-budget", "5m"},
	} {
		_, err := parseConfig("serve", bad, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
		var ue *usageError
		assert.ErrorAs(t, err, &ue, "%v", bad)
	}
}

func TestConfigEnvOverridesDefault(t *testing.T) {
	env := envMap(map[string]string{
		"XPROMO_ADDR":        "0.0.0.0:9000",
		"DATABASE_URL":       "postgres://app:pw@db.internal:5432/xpromo?sslmode=require",
		"XPROMO_DATA_DIR":    "/var/lib/xpromo",
		"XPROMO_ADMIN_TOKEN": strings.Repeat("a", 40),
		"XPROMO_MODE":        "live",
		"XPROMO_LOG_FORMAT":  "json",
		"XPROMO_LOG_LEVEL":   "debug",
	})
	cfg, err := parseConfig("serve", nil, env, &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, config{
		Lifecycle:   defaultLifecycle,
		Addr:        "0.0.0.0:9000",
		DatabaseURL: "postgres://app:pw@db.internal:5432/xpromo?sslmode=require",
		DataDir:     "/var/lib/xpromo",
		AdminToken:  strings.Repeat("a", 40),
		Mode:        "live",
		LogFormat:   "json",
		LogLevel:    slog.LevelDebug,
		ReadLimit:   600, WriteLimit: 60, JobConcurrency: 4, CanaryRate: 200, GroupCommitAuto: true,
		ConnectTimeout: 5 * time.Second, StatementTimeout: 20 * time.Second, RequestTimeout: 30 * time.Second,
		Gate: defaultGate, Scoring: defaultScoring, Guard: defaultGuard,
	}, cfg)
}

func TestConfigFlagOverridesEnv(t *testing.T) {
	env := envMap(map[string]string{
		"XPROMO_ADDR":       "0.0.0.0:9000",
		"DATABASE_URL":      "postgres://env-host/xpromo",
		"XPROMO_DATA_DIR":   "/env",
		"XPROMO_MODE":       "live",
		"XPROMO_LOG_FORMAT": "json",
		"XPROMO_LOG_LEVEL":  "error",
	})
	cfg, err := parseConfig("serve", []string{
		"--addr", "127.0.0.1:7000",
		"--database-url=", // an explicit empty flag still wins: back to SQLite
		"--data-dir", "/flag",
		"--mode", "test",
		"--log-format", "text",
		"--log-level", "warn",
	}, env, &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7000", cfg.Addr)
	assert.Empty(t, cfg.DatabaseURL)
	assert.Equal(t, "/flag", cfg.DataDir)
	assert.Equal(t, "test", cfg.Mode)
	assert.Equal(t, "text", cfg.LogFormat)
	assert.Equal(t, slog.LevelWarn, cfg.LogLevel)
}

func TestConfigCaseInsensitiveEnums(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"--mode", "TEST", "--log-format", "JSON", "--log-level", "WARN"}, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "test", cfg.Mode)
	assert.Equal(t, "json", cfg.LogFormat)
	assert.Equal(t, slog.LevelWarn, cfg.LogLevel)
}

func TestConfigInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // in the message
	}{
		{"mode flag", []string{"--mode", "prod"}, nil, `--mode: invalid mode "prod"`},
		{"mode env", nil, map[string]string{"XPROMO_MODE": "staging"}, `XPROMO_MODE: invalid mode "staging"`},
		{"log format", []string{"--log-format", "xml"}, nil, `invalid log format "xml"`},
		{"log level", nil, map[string]string{"XPROMO_LOG_LEVEL": "loud"}, `XPROMO_LOG_LEVEL: invalid log level "loud"`},
		{"addr without port", []string{"--addr", "localhost"}, nil, `invalid listen address "localhost"`},
		{"addr bad port", []string{"--addr", "127.0.0.1:99999"}, nil, `invalid port`},
		{"database scheme", nil, map[string]string{"DATABASE_URL": "mysql://u:secret@h/db"}, `unsupported database URL scheme "mysql"`},
		{"database no host", []string{"--database-url", "postgres:///db"}, nil, `names no host`},
		{"empty data dir", []string{"--data-dir", ""}, nil, `data directory must not be empty`},
		{"short live admin token", []string{"--mode", "live", "--admin-token", "hunter2"}, nil, `at least 32 characters`},
		{"stray argument", []string{"extra"}, nil, `unexpected argument "extra"`},
		{"no jobs at once", nil, map[string]string{"XPROMO_JOB_CONCURRENCY": "0"}, `XPROMO_JOB_CONCURRENCY: "0" is not a number of jobs from 1 to 64`},
		{"x402 facilitator", []string{"--x402-facilitator-url", "ftp://secret@x402.example"}, nil, `--x402-facilitator-url is not an http(s) URL`},
		{"x402 rpc", nil, map[string]string{"XPROMO_X402_RPC_URL": "sepolia.base.org/secret"}, `XPROMO_X402_RPC_URL is not an http(s) URL`},
		{"too many jobs at once", []string{"--job-concurrency", "1000"}, nil, `--job-concurrency: "1000" is not a number of jobs from 1 to 64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig("serve", tc.args, envMap(tc.env), &bytes.Buffer{}, &bytes.Buffer{})
			var ue *usageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.want)
			// Secrets are never echoed back.
			assert.NotContains(t, err.Error(), "secret")
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestConfigBadFlag(t *testing.T) {
	var out bytes.Buffer
	_, err := parseConfig("serve", []string{"--port", "80"}, envMap(nil), &bytes.Buffer{}, &out)
	assert.Equal(t, exitCode(exitUsage), err)
	assert.Contains(t, out.String(), "flag provided but not defined: -port")
	assert.Contains(t, out.String(), "Usage: xpromo-server serve")
}

// TestConfigHelp: help goes to stdout (it was asked for), lists the
// commands before serve's flags, and shows no value from the environment.
func TestConfigHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	_, err := parseConfig("serve", []string{"--help"}, envMap(map[string]string{"XPROMO_ADMIN_TOKEN": "tok-in-env"}), &out, &errOut)
	assert.True(t, errors.Is(err, flag.ErrHelp))
	assert.Empty(t, errOut.String())
	for _, cmd := range []string{"xpromo-server [serve] [flags]", "xpromo-server ledger verify", "xpromo-server help"} {
		assert.Contains(t, out.String(), cmd)
	}
	for _, s := range settings {
		assert.Contains(t, out.String(), s.env)
	}
	assert.NotContains(t, out.String(), "tok-in-env", "help must not show values from the environment")
}

func TestVerifyConfigIgnoresServeSettings(t *testing.T) {
	// `ledger verify` neither takes nor validates the serve-only settings.
	cfg, err := parseConfig("ledger verify", nil, envMap(map[string]string{"XPROMO_MODE": "bogus", "XPROMO_ADDR": "nope"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "./data", cfg.DataDir)
	var out bytes.Buffer
	_, err = parseConfig("ledger verify", []string{"--addr", "127.0.0.1:1"}, envMap(nil), &bytes.Buffer{}, &out)
	assert.Equal(t, exitCode(exitUsage), err)
	assert.Contains(t, out.String(), "flag provided but not defined: -addr")
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:s3cret@db:5432/xpromo?sslmode=require&password=other": "postgres://app@db:5432/xpromo",
		"postgresql://db.internal/xpromo":                                     "postgresql://db.internal/xpromo",
		"postgres://user@[::1]:5432/x":                                        "postgres://user@[::1]:5432/x",
	} {
		assert.Equal(t, want, redactURL(in))
	}
}

func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // on stdout or stderr
	}{
		{[]string{"help"}, exitOK, "ledger verify"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"ledger"}, exitUsage, `want the subcommand "verify"`},
		{[]string{"ledger", "balance"}, exitUsage, `want the subcommand "verify"`},
		{[]string{"serve", "-h"}, exitOK, "XPROMO_ADDR"},
		{[]string{"--mode", "nope"}, exitUsage, `invalid mode "nope"`},
		{[]string{"ledger", "verify", "--log-format", "yaml"}, exitUsage, `invalid log format "yaml"`},
		{[]string{"serve", "--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, envMap(nil), &stdout, &stderr)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, 1, strings.Count(stdout.String()+stderr.String(), tc.out), "reported once")
		})
	}
}

// The loopback setting of webhooks: test mode only.
func TestConfigWebhooksLoopback(t *testing.T) {
	cfg, err := parseConfig("serve", nil, envMap(map[string]string{"XPROMO_WEBHOOKS_ALLOW_LOOPBACK": "1"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.True(t, cfg.WebhooksAllowLoopback)
	cfg, err = parseConfig("serve", nil, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.False(t, cfg.WebhooksAllowLoopback)
	_, err = parseConfig("serve", []string{"--webhooks-allow-loopback", "maybe"}, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "not true or false")
	_, err = parseConfig("serve", []string{"--mode", "live", "--webhooks-allow-loopback", "true"}, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "test mode only")
}

// The profiler shows the process's memory: it listens on loopback only.
func TestConfigPprofAddrLoopbackOnly(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"--pprof-addr", "127.0.0.1:6060"}, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:6060", cfg.PprofAddr)
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "example.com:6060", "6060"} {
		_, err := parseConfig("serve", []string{"--pprof-addr", addr}, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
		var ue *usageError
		assert.ErrorAs(t, err, &ue, addr)
	}
}

// --background: all by default; none only beside a database other
// instances share (the embedded store has no other instance to sweep).
func TestConfigBackground(t *testing.T) {
	cfg, err := parseConfig("serve", nil, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.False(t, cfg.NoBackground)
	pg := "postgres://xpromo@db.example/xpromo"
	cfg, err = parseConfig("serve", []string{"--database-url", pg}, envMap(map[string]string{"XPROMO_BACKGROUND": "none"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.True(t, cfg.NoBackground)
	_, err = parseConfig("serve", []string{"--background", "none"}, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "none needs --database-url")
	_, err = parseConfig("serve", []string{"--database-url", pg, "--background", "fills"}, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	assert.ErrorContains(t, err, `"fills" is not all or none`)
}

// The failover bounds: defaults, overrides, and bad values refused.
func TestConfigFailoverTimeouts(t *testing.T) {
	cfg, err := parseConfig("serve", nil, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, cfg.ConnectTimeout)
	assert.Equal(t, 20*time.Second, cfg.StatementTimeout)
	assert.Equal(t, 30*time.Second, cfg.RequestTimeout)
	cfg, err = parseConfig("serve", []string{"--db-statement-timeout", "0", "--request-timeout", "5s"}, envMap(map[string]string{"XPROMO_DB_CONNECT_TIMEOUT": "2s"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, cfg.ConnectTimeout)
	assert.Zero(t, cfg.StatementTimeout)
	assert.Equal(t, 5*time.Second, cfg.RequestTimeout)
	assert.Zero(t, cfg.ReadConns, "the read pool as large as the write pool")
	cfg, err = parseConfig("serve", nil, envMap(map[string]string{"XPROMO_DB_READ_CONNS": "4"}), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, 4, cfg.ReadConns)
	for _, args := range [][]string{{"--request-timeout", "0"}, {"--db-connect-timeout", "soon"}, {"--db-statement-timeout", "-1s"}, {"--db-read-conns", "-1"}, {"--db-read-conns", "many"}} {
		_, err := parseConfig("serve", args, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
		var ue *usageError
		assert.ErrorAs(t, err, &ue, "%v", args)
	}
	cfg, err = parseConfig("ledger verify", nil, envMap(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Zero(t, cfg.StatementTimeout, "ledger verify's statements run as long as they need")
}
