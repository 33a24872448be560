package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
)

// newPostgresURL returns the URL of a fresh database (dropped after the
// test), skipping when no PostgreSQL is configured. The server only takes
// URLs, so a keyword/value XPROMO_TEST_DATABASE_URL skips too.
func newPostgresURL(t *testing.T) string {
	t.Helper()
	u := pgtest.NewTestDatabase(t)
	if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		t.Skip("xpromo-server takes postgres:// URLs; " + pgtest.EnvURL + " is a keyword/value string")
	}
	return u
}

func TestServePostgres(t *testing.T) {
	dbURL := newPostgresURL(t)
	// Add a password (trust authentication ignores it) to check that it is
	// never logged.
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), "pw-must-not-leak")
	q := u.Query()
	q.Set("application_name", "xpromo-cmd-test")
	u.RawQuery = q.Encode()

	base, logs, stop := startServe(t, nil, map[string]string{"DATABASE_URL": u.String()})
	code, body := get(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ready"}`, body)
	assert.Equal(t, exitOK, stop())

	l := logs.find("listening")
	require.NotNil(t, l)
	assert.Equal(t, "postgres", l["store"])
	assert.Equal(t, redactURL(dbURL), l["database"])
	for _, m := range logs.messages() {
		b, _ := json.Marshal(m)
		assert.NotContains(t, string(b), "pw-must-not-leak")
	}
}

func TestLedgerVerifyPostgres(t *testing.T) {
	dbURL := newPostgresURL(t)
	ctx := t.Context()
	db, err := postgres.Open(ctx, dbURL)
	require.NoError(t, err)
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := &ledger.Ledger{Store: db, Now: func() time.Time { return clock }}
	op, err := ledger.TopUp("topup:cs_pg", "app_adv", 2500, "")
	require.NoError(t, err)
	_, err = l.Post(ctx, op)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"ledger", "verify", "--database-url", dbURL}, envMap(nil), &stdout, &stderr)
	assert.Equal(t, exitOK, code, stderr.String())
	assert.Contains(t, stdout.String(), "store:      postgres "+redactURL(dbURL))
	assert.Contains(t, stdout.String(), "lines:      2\n")
	assert.Contains(t, stdout.String(), "violations: 0\n")
}

func TestLedgerVerifyUnreachablePostgres(t *testing.T) {
	// Port 1 on loopback: nothing listens there, the connection is refused.
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"ledger", "verify", "--database-url", "postgres://u:pw-secret@127.0.0.1:1/x?connect_timeout=5"}, envMap(nil), io.Discard, &stderr)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr.String(), "opening PostgreSQL at postgres://u@127.0.0.1:1/x")
	assert.NotContains(t, stderr.String(), "pw-secret")
}

// An instance started with --background=none answers requests and runs no
// background work: an app registered through it gets its vetting job
// queued, and the job waits until an instance with all (the default)
// claims it.
func TestServePostgresBackgroundNone(t *testing.T) {
	dbURL := newPostgresURL(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	base, logs, stopNone := startServe(t, []string{"--background", "none"}, env)
	defer func() { stopNone() }()
	// Logged just after "listening", which is what startServe waits for.
	require.Eventually(t, func() bool {
		return logs.find("background work off: this instance answers requests and stores its fill counts only") != nil
	}, 10*time.Second, 10*time.Millisecond)
	body := `{"name":"Snip","platform":"mac","bundle_id":"com.example.snip","domain":"example.com",` +
		`"download_url":"https://example.com/Snip.zip","contact_email":"dev@example.com"}`
	res, err := http.Post(base+"/v1/apps", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode, string(b))

	db, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer db.Close(t.Context())
	// jobs is the queue as the store holds it: each job's status and when it
	// may run next (a run that fails puts it back with a later run_after).
	jobs := func() string {
		var out string
		require.NoError(t, db.QueryRow(t.Context(), `SELECT coalesce(string_agg(kind || ' ' || status || ' ' || run_after::text, ', ' ORDER BY id), '') FROM jobs`).Scan(&out))
		return out
	}
	queued := jobs()
	require.Contains(t, queued, "gate queued", "the registration queues its vetting")
	// The queue is polled every 2 seconds (and at start): an instance that
	// ran it would have claimed the jobs by now.
	time.Sleep(3 * time.Second)
	require.Equal(t, queued, jobs(), "an instance with --background=none touched the job queue")

	_, _, stopAll := startServe(t, nil, env)
	defer stopAll()
	require.Eventually(t, func() bool { return jobs() != queued }, 20*time.Second, 50*time.Millisecond,
		"an instance with --background=all runs the queued jobs")
}
