package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/sqlite"
)

// logWatcher is the stderr of a serve run: it keeps every JSON log line and
// hands the address of the "listening" line to a channel.
type logWatcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines []map[string]any
	addr  chan string
}

func newLogWatcher() *logWatcher { return &logWatcher{addr: make(chan string, 1)} }

func (w *logWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadBytes('\n')
		if err != nil { // an incomplete line: keep it for the next write
			w.buf.Reset()
			w.buf.Write(line)
			return len(p), nil
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			m = map[string]any{"raw": string(line)}
		}
		w.lines = append(w.lines, m)
		if m["msg"] == "listening" {
			w.addr <- m["addr"].(string)
		}
	}
}

func (w *logWatcher) messages() []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]map[string]any(nil), w.lines...)
}

func (w *logWatcher) find(msg string) map[string]any {
	for _, l := range w.messages() {
		if l["msg"] == msg {
			return l
		}
	}
	return nil
}

// startServe runs `serve` in the background and returns its base URL and a
// function that cancels it and returns its exit status.
func startServe(t *testing.T, args []string, env map[string]string) (string, *logWatcher, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logs := newLogWatcher()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug"}, args...),
			envMap(env), io.Discard, logs)
	}()
	select {
	case addr := <-logs.addr:
		return "http://" + addr, logs, func() int { cancel(); return <-done }
	case code := <-done:
		cancel()
		t.Fatalf("serve exited with %d before listening; logs: %v", code, logs.messages())
	}
	return "", nil, nil
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServeSQLite(t *testing.T) {
	dir := t.TempDir()
	token := strings.Repeat("t", 40)
	base, logs, stop := startServe(t, []string{"--data-dir", dir}, map[string]string{"XPROMO_ADMIN_TOKEN": token})

	code, body := get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ok"}`, body)
	code, body = get(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ready"}`, body)
	code, body = get(t, base+"/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `xpromo_http_requests_total{method="GET",route="/readyz",status="200"} 1`)

	assert.Equal(t, exitOK, stop())

	l := logs.find("listening")
	require.NotNil(t, l)
	assert.Equal(t, "sqlite", l["store"])
	assert.Equal(t, filepath.Join(dir, "xpromo.db"), l["database"])
	assert.Equal(t, "test", l["mode"])
	assert.Equal(t, "enabled", l["admin_api"])
	warn := logs.find("TEST MODE: payments are simulated, API keys are xp_test_, payouts are fake and x402 uses the testnet; never run test mode in production (set --mode live)")
	require.NotNil(t, warn, "test mode must be announced")
	assert.Equal(t, "WARN", warn["level"])
	assert.NotNil(t, logs.find("shutting down"))
	assert.NotNil(t, logs.find("stopped"))
	for _, m := range logs.messages() {
		b, _ := json.Marshal(m)
		assert.NotContains(t, string(b), token, "the admin token must never be logged")
	}
	assert.FileExists(t, filepath.Join(dir, "xpromo.db"))

	// The listener is closed after shutdown.
	_, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	assert.Error(t, err)
}

// Live mode moves real money through Stripe: without its settings, or with
// a test key against Stripe's own API, the server refuses to start and says
// which setting is missing.
func TestServeLiveModeRefusesWithoutStripe(t *testing.T) {
	base := []string{"--data-dir", "", "--addr", "127.0.0.1:0", "--mode", "live"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no key", nil, "live mode needs the Stripe secret key (--stripe-secret-key, XPROMO_STRIPE_SECRET_KEY)"},
		{"publishable key", map[string]string{"XPROMO_STRIPE_SECRET_KEY": "pk_live_x"}, "must be a secret (sk_…) or restricted (rk_…) key"},
		{"test key against Stripe", map[string]string{"XPROMO_STRIPE_SECRET_KEY": "sk_test_x", "XPROMO_STRIPE_WEBHOOK_SECRET": "whsec_x", "XPROMO_STRIPE_CONNECT_COUNTRY": "DE"}, "refuses a Stripe test key"},
		{"no webhook secret", map[string]string{"XPROMO_STRIPE_SECRET_KEY": "sk_live_x"}, "signing secret of the Stripe webhook endpoint (--stripe-webhook-secret"},
		{"no country", map[string]string{"XPROMO_STRIPE_SECRET_KEY": "sk_live_x", "XPROMO_STRIPE_WEBHOOK_SECRET": "whsec_a,whsec_b"}, "--stripe-connect-country"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string(nil), base...)
			args[1] = t.TempDir()
			var stderr bytes.Buffer
			code := run(t.Context(), args, envMap(tc.env), io.Discard, &stderr)
			assert.Equal(t, exitFail, code)
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

func TestServeCannotOpenStore(t *testing.T) {
	// The data dir is a file: SQLite cannot create its database under it.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"--data-dir", file}, envMap(nil), io.Discard, &stderr)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr.String(), "cannot open the store")
}

func TestServeCannotListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"--data-dir", t.TempDir(), "--addr", ln.Addr().String()}, envMap(nil), io.Discard, &stderr)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr.String(), "cannot listen")
}

// seedLedger writes a top-up and an escrow hold into the SQLite database
// under dir and returns the advertiser's wallet account.
func seedLedger(t *testing.T, dir string) string {
	t.Helper()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "xpromo.db"))
	require.NoError(t, err)
	defer db.Close()
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := &ledger.Ledger{Store: db, Now: func() time.Time { return clock }}

	top, err := ledger.TopUp("topup:cs_1", "app_adv", 10_000, "checkout")
	require.NoError(t, err)
	_, err = l.Post(ctx, top)
	require.NoError(t, err)
	hold, err := ledger.EscrowHold("hold:chain_1", ledger.Hold{ID: "hold_1", Advertiser: "app_adv", Publisher: "app_pub", Amount: 300, ChainID: "chain_1"})
	require.NoError(t, err)
	_, err = l.Post(ctx, hold)
	require.NoError(t, err)
	return ledger.Wallet("app_adv")
}

func TestLedgerVerifyOK(t *testing.T) {
	dir := t.TempDir()
	seedLedger(t, dir)

	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"ledger", "verify", "--data-dir", dir}, envMap(nil), &stdout, &stderr)
	assert.Equal(t, exitOK, code, stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "store:      sqlite "+filepath.Join(dir, "xpromo.db"))
	assert.Contains(t, out, "lines:      4\n")
	assert.Contains(t, out, "operations: 2\n")
	assert.Contains(t, out, "holds:      1\n")
	assert.Contains(t, out, "violations: 0\n")
	assert.NotContains(t, out, "VIOLATION")
}

// verify passes on the ledger the test built and fails on a corrupted copy
// of it: one line's amount edited (after dropping the append-only triggers,
// as anyone with the file could) and one account head moved.
func TestLedgerVerifyFindsTamperingInACopy(t *testing.T) {
	dir := t.TempDir()
	wallet := seedLedger(t, dir)
	verify := func(dataDir string) (int, []string) {
		var stdout bytes.Buffer
		code := run(t.Context(), []string{"ledger", "verify"}, envMap(map[string]string{"XPROMO_DATA_DIR": dataDir}), &stdout, io.Discard)
		var violations []string
		sc := bufio.NewScanner(strings.NewReader(stdout.String()))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "VIOLATION ") {
				violations = append(violations, sc.Text())
			}
		}
		return code, violations
	}
	code, violations := verify(dir)
	require.Equal(t, exitOK, code, violations)

	copyDir := t.TempDir()
	orig, err := os.ReadFile(filepath.Join(dir, "xpromo.db"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(copyDir, "xpromo.db"), orig, 0o600))
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(copyDir, "xpromo.db"))
	require.NoError(t, err)
	for _, stmt := range []string{
		`DROP TRIGGER ledger_lines_no_update`,
		`UPDATE ledger_lines SET amount = amount + 1000 WHERE account_id = '` + wallet + `' AND seq = 1`,
		`UPDATE ledger_accounts SET balance = balance + 1 WHERE id = '` + wallet + `'`,
	} {
		_, err = raw.ExecContext(t.Context(), stmt)
		require.NoError(t, err, stmt)
	}
	require.NoError(t, raw.Close())

	code, violations = verify(copyDir)
	assert.Equal(t, exitFail, code)
	joined := strings.Join(violations, "\n")
	for _, check := range []string{"zero_sum", "balance_chain", "hash_chain", "head " + wallet} {
		assert.Contains(t, joined, check)
	}
	code, _ = verify(dir)
	assert.Equal(t, exitOK, code, "the original is untouched")
}

func TestLedgerVerifyMissingDatabase(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"ledger", "verify", "--data-dir", dir}, envMap(nil), io.Discard, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "no database at")
	assert.NoFileExists(t, filepath.Join(dir, "xpromo.db"), "verify must not create a database")
}

// Started without an admin token (as `make run` is), the server says at
// start that the admin API is off and how to turn it on, and an admin call
// says the same.
func TestServeAdminAPIOff(t *testing.T) {
	base, logs, stop := startServe(t, []string{"--data-dir", t.TempDir()}, nil)
	req, err := http.NewRequest("GET", base+"/v1/admin/audit", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+strings.Repeat("t", 40))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), `"code":"admin_api_disabled"`)
	assert.Contains(t, string(body), "XPROMO_ADMIN_TOKEN")

	assert.Equal(t, exitOK, stop())
	l := logs.find("listening")
	require.NotNil(t, l)
	assert.Equal(t, "disabled", l["admin_api"])
	off := logs.find(adminAPIOffMessage)
	require.NotNil(t, off, "the admin API being off must be announced with how to enable it")
	assert.Contains(t, off["msg"], "--admin-token")
	assert.Contains(t, off["msg"], "XPROMO_ADMIN_TOKEN")
}
