package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/txunit"
)

func counter(t *testing.T, db *postgres.DB, name, label string) float64 {
	t.Helper()
	for _, c := range db.Collectors() {
		m := c.(*prometheus.CounterVec).WithLabelValues(label)
		if strings.Contains(m.Desc().String(), `"`+name+`"`) {
			return testutil.ToFloat64(m)
		}
	}
	t.Fatalf("no metric %s{%s}", name, label)
	return 0
}

// assertUnavailable: err answers 503 unavailable, from the store or, when
// the caller's deadline cut an attempt off, from the HTTP layer (which
// answers a passed deadline so).
func assertUnavailable(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	if !errors.Is(err, context.DeadlineExceeded) {
		assert.Equal(t, 503, apperr.HTTPStatus(err), "%v", err)
	}
}

func scratchTable(t *testing.T, db *postgres.DB, url string) {
	t.Helper()
	conn := ownerConn(t, url)
	_, err := conn.Exec(context.Background(), `CREATE TABLE ha_probe (id int PRIMARY KEY); GRANT SELECT, INSERT ON ha_probe TO `+postgres.AppRole)
	require.NoError(t, err)
}

func probes(t *testing.T, url string) int {
	t.Helper()
	var n int
	require.NoError(t, ownerConn(t, url).QueryRow(context.Background(), `SELECT count(*) FROM ha_probe`).Scan(&n))
	return n
}

// A transaction whose connection is lost before its COMMIT is sent did not
// commit: it runs again, and commits once.
func TestConnectionLostBeforeCommitRunsAgain(t *testing.T) {
	direct := pgtest.NewTestDatabase(t)
	p := pgtest.NewRelay(t, direct)
	db := open(t, p.URL())
	scratchTable(t, db, direct)
	ctx := context.Background()
	runs := 0
	p.Cut("xpromo-cut-here")
	err := db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		runs++
		if err := postgres.ExecIn(ctx, tx, `INSERT INTO ha_probe VALUES (1)`); err != nil {
			return err
		}
		return postgres.ExecIn(ctx, tx, `SELECT 'xpromo-cut-here'`)
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Equal(t, 1, probes(t, direct))
	assert.Equal(t, 1.0, counter(t, db, "xpromo_db_retries_total", "unavailable"))
	assert.Equal(t, 1.0, counter(t, db, "xpromo_db_errors_total", "connection"))
}

// Inside a unit of work (a keyed request's one transaction, which the
// store cannot run again alone) a statement whose connection is lost fails
// with 503 unavailable itself, so that the request answers 503, not 500.
func TestConnectionLostInUnitAnswersUnavailable(t *testing.T) {
	direct := pgtest.NewTestDatabase(t)
	p := pgtest.NewRelay(t, direct)
	db := open(t, p.URL())
	scratchTable(t, db, direct)
	st := storage.Units(db)
	ctx, unit := txunit.Begin(context.Background())
	p.Cut("xpromo-cut-here")
	err := st.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := postgres.ExecIn(ctx, tx, `INSERT INTO ha_probe VALUES (1)`); err != nil {
			return err
		}
		return postgres.ExecIn(ctx, tx, `SELECT 'xpromo-cut-here'`)
	})
	require.Error(t, err)
	assert.Equal(t, 503, apperr.HTTPStatus(err), "%v", err)
	unit.Rollback()
	assert.Equal(t, 0, probes(t, direct))
}

// A unit of work's COMMIT sent to a primary that hangs is cut off at the
// request's deadline (the unit's transaction is detached from the
// request's cancellation) and answers unknown, instead of waiting for the
// kernel to give up on the connection.
func TestHungCommitInUnitEndsAtDeadline(t *testing.T) {
	direct := pgtest.NewTestDatabase(t)
	p := pgtest.NewRelay(t, direct)
	db := open(t, p.URL())
	scratchTable(t, db, direct)
	st := storage.Units(db)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ctx, unit := txunit.Begin(ctx)
	require.NoError(t, st.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return postgres.ExecIn(ctx, tx, `INSERT INTO ha_probe VALUES (1)`)
	}))
	p.Hold() // the COMMIT is the next thing sent
	done := make(chan error, 1)
	go func() { _, err := unit.Commit(); done <- err }()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.True(t, apperr.Is(err, apperr.Unavailable), "%v", err)
		var e *apperr.Error
		require.True(t, errors.As(err, &e))
		assert.Contains(t, e.Message, "same Idempotency-Key")
	case <-time.After(time.Minute):
		t.Fatal("the COMMIT to a hung primary outlived the request's deadline by a minute")
	}
	p.Resume()
}

// A COMMIT sent without an answer may have committed: it is not run again,
// and answers 503 unavailable asking for a retry with the same
// Idempotency-Key.
func TestCommitWithoutAnswerIsUnknown(t *testing.T) {
	direct := pgtest.NewTestDatabase(t)
	p := pgtest.NewRelay(t, direct)
	u, err := url.Parse(p.URL())
	require.NoError(t, err)
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	via := u.String()
	db := open(t, via)
	scratchTable(t, db, direct)
	ctx := context.Background()
	insert := func(id int, cut bool) (runs int, err error) {
		err = db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			runs++
			if err := postgres.ExecIn(ctx, tx, `INSERT INTO ha_probe VALUES ($1)`, id); err != nil {
				return err
			}
			// The connection goes with the COMMIT (prepared by the first
			// transaction, so sent as one message).
			if cut {
				p.Cut("")
			}
			return nil
		})
		return runs, err
	}
	_, err = insert(1, false)
	require.NoError(t, err)
	runs, err := insert(2, true)
	require.Error(t, err)
	assert.Equal(t, 1, runs)
	assert.True(t, apperr.Is(err, apperr.Unavailable), "%v", err)
	assert.Equal(t, 503, apperr.HTTPStatus(err))
	var e *apperr.Error
	require.True(t, errors.As(err, &e))
	assert.Contains(t, e.Message, "same Idempotency-Key")
	assert.Equal(t, 1.0, counter(t, db, "xpromo_db_errors_total", "commit_unknown"))
	assert.Equal(t, 1, probes(t, direct), "the proxy never relayed the COMMIT")
}

// While the database refuses connections, a transaction waits for it up to
// its caller's deadline, then answers 503 unavailable; once it is back the
// next one commits.
func TestDatabaseDownAnswersUnavailable(t *testing.T) {
	direct := pgtest.NewTestDatabase(t)
	p := pgtest.NewRelay(t, direct)
	db := open(t, p.URL())
	scratchTable(t, db, direct)
	p.Refuse()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return postgres.ExecIn(ctx, tx, `INSERT INTO ha_probe VALUES (3)`)
	})
	assertUnavailable(t, err)
	err = db.View(ctx, func(ctx context.Context, tx storage.Tx) error { return nil })
	assertUnavailable(t, err)

	p.Resume()
	require.NoError(t, db.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return postgres.ExecIn(ctx, tx, `INSERT INTO ha_probe VALUES (3)`)
	}))
	assert.Equal(t, 1, probes(t, direct))
}

// A node that answers read-only (a standby, a demoted primary: SQLSTATE
// 25006) answers 503 unavailable, and its connections leave the pool: once
// writes are possible again, the next transaction commits on a fresh one.
func TestReadOnlyNodeIsDropped(t *testing.T) {
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	scratchTable(t, db, url)
	owner := ownerConn(t, url)
	ctx := context.Background()
	var name string
	require.NoError(t, owner.QueryRow(ctx, `SELECT current_database()`).Scan(&name))
	_, err := owner.Exec(ctx, `ALTER DATABASE "`+name+`" SET default_transaction_read_only = on`)
	require.NoError(t, err)
	db.Pool().Reset() // the next connections are read-only

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = db.Update(short, func(ctx context.Context, tx storage.Tx) error {
		return postgres.ExecIn(ctx, tx, `INSERT INTO ha_probe VALUES (4)`)
	})
	assertUnavailable(t, err)
	assert.GreaterOrEqual(t, counter(t, db, "xpromo_db_errors_total", "read_only"), 1.0)

	_, err = owner.Exec(ctx, `ALTER DATABASE "`+name+`" RESET default_transaction_read_only`)
	require.NoError(t, err)
	// No Reset now: the pool must have dropped the read-only connections.
	require.NoError(t, db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return postgres.ExecIn(ctx, tx, `INSERT INTO ha_probe VALUES (4)`)
	}))
	assert.Equal(t, 1, probes(t, url))
}

// The statement timeout applies to the pool's sessions and answers 503.
func TestStatementTimeout(t *testing.T) {
	url := pgtest.NewTestDatabase(t)
	db, err := postgres.OpenWith(context.Background(), url, postgres.Options{StatementTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	runs := 0
	err = db.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		runs++
		return postgres.ExecIn(ctx, tx, `SELECT pg_sleep(2)`)
	})
	assert.Equal(t, 503, apperr.HTTPStatus(err), "%v", err)
	assert.Equal(t, 1, runs, "a statement that timed out is not run again")
	assert.Equal(t, 1.0, counter(t, db, "xpromo_db_errors_total", "timeout"))
}

// A COMMIT PostgreSQL reports done after warning that its wait for the
// synchronous standby was cancelled is on the primary only: it answers
// unknown (503, retry with the same key), not success. The warning is
// raised here by hand, with PostgreSQL's own text.
func TestCancelledSyncWaitIsUnknown(t *testing.T) {
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	ctx := context.Background()
	runs := 0
	err := db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		runs++
		return postgres.ExecIn(ctx, tx, `DO $$ BEGIN RAISE WARNING 'canceling wait for synchronous replication due to user request'; END $$`)
	})
	require.Error(t, err)
	assert.Equal(t, 1, runs)
	assert.Equal(t, 503, apperr.HTTPStatus(err), "%v", err)
	assert.Equal(t, 1.0, counter(t, db, "xpromo_db_errors_total", "commit_unknown"))
	// The connection is fine: the next transaction commits.
	require.NoError(t, db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return postgres.ExecIn(ctx, tx, `SELECT 1`)
	}))
}
