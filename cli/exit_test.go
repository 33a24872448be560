package cli_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/cli"
	"github.com/xpromo/xpromo/server/assembly"
)

// TestExitCodes: each class of failure has its own exit status and prints
// `error: <code>: <message>` on stderr.
func TestExitCodes(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	app := e.register("", "Exit", "com.example.exit")

	t.Run("usage", func(t *testing.T) {
		e.fails(cli.ExitUsage, "usage", "no-such-command")
		r := e.fails(cli.ExitUsage, "usage", "rate-crad")
		assert.Contains(t, r.stderr, `did you mean "rate-card"?`)
		e.fails(cli.ExitUsage, "usage", "apps")
		e.fails(cli.ExitUsage, "usage", "rate-card", "--no-such-flag")
		e.fails(cli.ExitUsage, "usage", "rate-card", "extra")
		e.fails(cli.ExitUsage, "usage", "topup")                            // --amount-cents missing
		e.fails(cli.ExitUsage, "usage", "topup", "--amount-cents", "fifty") // not an integer
		e.fails(cli.ExitUsage, "usage", "campaigns", "pause")               // <campaign_id> missing
		e.fails(cli.ExitUsage, "usage", "campaigns", "update", "cmp_1")     // nothing to change
		e.fails(cli.ExitUsage, "usage", "campaigns", "update", "cmp_1", "--max-bid-cents", "500", "--floor-price")
		e.fails(cli.ExitUsage, "usage", "ledger", "--format", "xml")           // not a format
		e.fails(cli.ExitUsage, "usage", "ledger", "--format", "csv", "--json") // disagree
		e.fails(cli.ExitUsage, "usage", "topup", "--amount-cents", "5000", "--x402", "--complete")
		e.fails(cli.ExitUsage, "usage", "admin", "reject", app.appID)                // --reason missing
		e.fails(cli.ExitUsage, "usage", "rate-card", "--base-url", "127.0.0.1:8080") // not absolute
		e.fails(cli.ExitUsage, "usage", "apps", "register", "--name", "X", "--platform", "mac", "--bundle-id", "a.b",
			"--domain", "example.com", "--download-url", "https://example.com/x", "--contact-email", "a@example.com") // the profile holds a key
		e.fails(cli.ExitUsage, "missing_app_id", "ledger", "--profile", "empty", "--api-key", app.apiKey)
	})
	t.Run("auth", func(t *testing.T) {
		r := e.fails(cli.ExitAuth, "unauthorized", "apps", "score", "--api-key", "xp_test_00000000000000000000000000000000")
		assert.NotContains(t, r.stderr, app.apiKey)
		e.fails(cli.ExitAuth, "missing_api_key", "stats", "--profile", "empty")
		e.fails(cli.ExitAuth, "unauthorized", "admin", "audit", "--admin-token", "wrong")
		noAdmin := newCLI(t, srv)
		noAdmin.fails(cli.ExitAuth, "missing_admin_token", "admin", "audit")
		// A server whose admin API is off says so, and how to turn it on.
		off := newCLI(t, startServer(t, assembly.Config{AdminToken: adminOff}))
		off.vars["XPROMO_ADMIN_TOKEN"] = adminToken
		r = off.fails(cli.ExitAuth, "admin_api_disabled", "admin", "audit")
		assert.Contains(t, r.stderr, "XPROMO_ADMIN_TOKEN")
		assert.NotContains(t, r.stderr, adminToken)
	})
	t.Run("not found", func(t *testing.T) {
		e.fails(cli.ExitNotFound, "not_found", "campaigns", "pause", "cmp_00000000000000000000000000")
		e.fails(cli.ExitNotFound, "not_found", "campaigns", "show", "cmp_00000000000000000000000000")
		e.fails(cli.ExitNotFound, "not_found", "campaigns", "update", "cmp_00000000000000000000000000", "--floor-price")
		other := e.register("other", "Other", "com.example.other")
		e.fails(cli.ExitNotFound, "not_found", "apps", "score", "--app-id", other.appID) // another app's id
		e.fails(cli.ExitNotFound, "not_found", "admin", "approve", "app_00000000000000000000000000")
	})
	t.Run("validation", func(t *testing.T) {
		e.fails(cli.ExitValidation, "invalid_platform", "apps", "register", "--profile", "linux", "--name", "X", "--platform", "linux",
			"--bundle-id", "a.b", "--domain", "example.com", "--download-url", "https://example.com/x", "--contact-email", "a@example.com")
		e.fails(cli.ExitValidation, "below_minimum", "topup", "--amount-cents", "4999")
		e.fails(cli.ExitValidation, "invalid_period", "stats", "--period", "forever")
		e.fails(cli.ExitValidation, "invalid_date", "ledger", "--from", "yesterday")
		e.fails(cli.ExitValidation, "bid_below_floor", "campaigns", "create", "--categories", "productivity", "--daily-budget-cents", "5000", "--max-bid-cents", "1")
		e.fails(cli.ExitValidation, "invalid_campaign_status", "campaigns", "list", "--status", "running")
		e.fails(cli.ExitValidation, "invalid_idempotency_key", "payout", "--idempotency-key", "tab\there")
	})
	t.Run("conflict", func(t *testing.T) {
		e.fails(cli.ExitConflict, "below_minimum", "payout")
		e.ok("admin", "approve", app.appID)
		e.fails(cli.ExitConflict, "invalid_transition", "admin", "approve", app.appID)
		e.fails(cli.ExitConflict, "insufficient_funds", "admin", "adjust", app.appID, "--amount-cents", "-100", "--note", "too much")
		e.fails(cli.ExitConflict, "floor_cannot_rise", "admin", "floor-cut", "productivity", "--platform", "mac", "--floor-cents", "100000", "--reason", "no")
	})
	t.Run("other", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "exists.pem")
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o600))
		e.fails(cli.ExitOther, "file", "keys", "sdk", "new", "--out", f)
	})
}

// TestRateLimited: a 429 exits 7 and says when to retry.
func TestRateLimited(t *testing.T) {
	srv := startServer(t, assembly.Config{ReadLimit: 2, WriteLimit: 2})
	e := newCLI(t, srv)
	e.ok("rate-card")
	e.ok("rate-card")
	r := e.fails(cli.ExitRateLimited, "rate_limited", "rate-card")
	assert.Contains(t, r.stderr, "(retry_after 2026-11-21T09:01:00Z)")
}

// TestServerErrors: a 5xx and an unreachable server exit 8.
func TestServerErrors(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.register("", "Down", "com.example.down")
	require.NoError(t, srv.store.Close()) // the database goes away under the server
	e.fails(cli.ExitServer, "", "stats")

	// Nothing listens on a port just released.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	down := newCLI(t, nil)
	r := down.fails(cli.ExitServer, "network", "rate-card", "--base-url", "http://"+addr, "--retries", "0")
	assert.Contains(t, r.stderr, addr)
}

// TestInterrupted: a cancelled context (Ctrl-C) exits 130.
func TestInterrupted(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := e.runCtx(ctx, "rate-card")
	assert.Equal(t, cli.ExitInterrupted, r.code, r)
	assert.True(t, strings.HasPrefix(r.stderr, "error: interrupted: "), r.stderr)
}

// TestHelp: help is not an error.
func TestHelp(t *testing.T) {
	e := newCLI(t, nil)
	r := e.ok("--help")
	for _, cmd := range []string{"apps", "rate-card", "network-stats", "guide", "topup", "campaigns", "ledger", "stats", "payout", "keys", "admin", "config"} {
		assert.Contains(t, r.stdout, "  "+cmd+" ", "help lists %s", cmd)
	}
	assert.Contains(t, e.ok("admin", "--help").stdout, "floor-cut")
	assert.Equal(t, "xpromo version "+cli.Version+"\n", e.ok("--version").stdout)
}
