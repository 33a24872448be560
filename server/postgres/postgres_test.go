package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

var appendOnlyTables = []string{"ledger_operations", "ledger_lines", "escrow_holds", "escrow_resolutions"}

func open(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// ownerConn connects as the URL's user, the owner of the tables (a superuser
// in the tests), without the pool's SET ROLE.
func ownerConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		url := pgtest.NewTestDatabase(t)
		db := open(t, url)
		return storetest.Harness{
			Store: db,
			Exec:  db.Exec,
			Tamper: func(ctx context.Context, stmt string) error {
				return tamper(ctx, url, stmt)
			},
		}
	})
}

// tamper does what the owner (here a superuser) can always do: switch the
// append-only triggers off, then change the rows. Only the hash chain and
// verify stand in the way of that.
func tamper(ctx context.Context, url, stmt string) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, table := range appendOnlyTables {
		if _, err := conn.Exec(ctx, "ALTER TABLE "+table+" DISABLE TRIGGER ALL"); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, stmt)
	return err
}

// seed posts a top-up, a hold and its release, so that every ledger table has
// rows (row triggers only fire on rows).
func seed(t *testing.T, db *postgres.DB) {
	t.Helper()
	l := &ledger.Ledger{Store: db, Now: func() time.Time { return time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC) }}
	hold := ledger.Hold{ID: "ch_1", Advertiser: "adv", Publisher: "pub", Amount: 100, ChainID: "ch_1"}
	for _, build := range []func() (ledger.Operation, error){
		func() (ledger.Operation, error) { return ledger.TopUp("t1", "adv", 1000, "") },
		func() (ledger.Operation, error) { return ledger.EscrowHold("hold:ch_1", hold) },
		func() (ledger.Operation, error) { return ledger.EscrowRelease("release:ch_1", hold) },
	} {
		op, err := build()
		require.NoError(t, err)
		_, err = l.Post(context.Background(), op)
		require.NoError(t, err)
	}
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func counts(t *testing.T, conn *pgx.Conn) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range append([]string{"ledger_accounts"}, appendOnlyTables...) {
		var n int
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
		out[table] = n
	}
	return out
}

// TestAppendOnlyLayers checks each layer on its own: the triggers against the
// owner (a superuser here), also under session_replication_role = replica,
// and the privileges against the application role, which are refused before
// any trigger runs.
func TestAppendOnlyLayers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	seed(t, db)
	owner := ownerConn(t, url)
	before := counts(t, owner)
	for table, n := range before {
		require.Positive(t, n, "seed left %s empty", table)
	}

	refused := func(t *testing.T, stmt, code, message string) {
		t.Helper()
		_, err := owner.Exec(ctx, stmt)
		require.Error(t, err, "%s must be refused", stmt)
		assert.Equal(t, code, pgCode(err), "%s: %v", stmt, err)
		assert.Contains(t, err.Error(), message, stmt)
	}

	triggers := func(t *testing.T) {
		for _, table := range appendOnlyTables {
			refused(t, "UPDATE "+table+" SET created_at = created_at", "42501", table+" is append-only: UPDATE blocked")
			refused(t, "DELETE FROM "+table, "42501", table+" is append-only: DELETE blocked")
			// CASCADE, or the tables other tables reference fail on the
			// foreign key before any trigger runs. The first table's
			// trigger stops the whole statement.
			refused(t, "TRUNCATE "+table+" CASCADE", "42501", "is append-only: TRUNCATE blocked")
		}
		refused(t, "TRUNCATE ledger_lines", "42501", "ledger_lines is append-only: TRUNCATE blocked")
		refused(t, "TRUNCATE escrow_resolutions", "42501", "escrow_resolutions is append-only: TRUNCATE blocked")
		refused(t, "DELETE FROM ledger_accounts", "42501", "ledger_accounts is append-only: DELETE blocked")
		refused(t, "TRUNCATE ledger_accounts CASCADE", "42501", "is append-only: TRUNCATE blocked")
	}

	t.Run("OwnerHitsTriggers", func(t *testing.T) {
		var super bool
		require.NoError(t, owner.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super))
		if !super {
			t.Log("the test user is not a superuser: the replica case below will be refused by privileges instead")
		}
		triggers(t)
	})

	t.Run("ReplicaRoleStillHitsTriggers", func(t *testing.T) {
		if _, err := owner.Exec(ctx, "SET session_replication_role = replica"); err != nil {
			t.Skipf("cannot set session_replication_role (not a superuser): %v", err)
		}
		defer owner.Exec(ctx, "RESET session_replication_role")
		triggers(t)
	})

	t.Run("AppRoleHasNoPrivilege", func(t *testing.T) {
		_, err := owner.Exec(ctx, "SET ROLE "+postgres.AppRole)
		require.NoError(t, err)
		defer owner.Exec(ctx, "RESET ROLE")
		for _, table := range appendOnlyTables {
			for _, stmt := range []string{
				"UPDATE " + table + " SET created_at = created_at",
				"DELETE FROM " + table,
				"TRUNCATE " + table + " CASCADE",
				"TRUNCATE " + table,
			} {
				refused(t, stmt, "42501", "permission denied for table")
			}
			refused(t, "ALTER TABLE "+table+" DISABLE TRIGGER ALL", "42501", "must be owner of table "+table)
		}
		refused(t, "DELETE FROM ledger_accounts", "42501", "permission denied for table ledger_accounts")
		refused(t, "TRUNCATE ledger_accounts", "42501", "permission denied for table ledger_accounts")
		refused(t, "SET session_replication_role = replica", "42501", "permission denied to set parameter")
		refused(t, "SELECT * FROM goose_db_version", "42501", "permission denied for table goose_db_version")
	})

	t.Run("AppPoolMapsToLedgerAppendOnly", func(t *testing.T) {
		for _, table := range appendOnlyTables {
			err := db.Exec(ctx, "DELETE FROM "+table)
			require.Error(t, err)
			assert.Equal(t, apperr.LedgerAppendOnly, apperr.Code(err), "%v", err)
			assert.Equal(t, "42501", pgCode(err), "the database error stays reachable")
		}
		err := db.Exec(ctx, "DELETE FROM ledger_accounts")
		assert.Equal(t, apperr.LedgerAppendOnly, apperr.Code(err), "%v", err)
		var who string
		require.NoError(t, db.Pool().QueryRow(ctx, "SELECT current_user").Scan(&who))
		assert.Equal(t, postgres.AppRole, who, "the pool runs as the application role")
	})

	t.Run("TriggersAreEnabledAlways", func(t *testing.T) {
		rows, err := owner.Query(ctx, `SELECT c.relname, t.tgname, t.tgenabled::text FROM pg_trigger t
			JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal
			AND c.relname IN ('ledger_accounts', 'ledger_operations', 'ledger_lines', 'escrow_holds', 'escrow_resolutions') ORDER BY 1, 2`)
		require.NoError(t, err)
		type trig struct{ Table, Name, Enabled string }
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[trig])
		require.NoError(t, err)
		require.Len(t, got, 4*3+2+3+1, "UPDATE, DELETE, TRUNCATE on four tables; DELETE, TRUNCATE on accounts; the daily rollups' INSERT on holds, resolutions and lines (00032); the wallet totals' INSERT on lines (00041): %v", got)
		for _, tr := range got {
			assert.Equal(t, "A", tr.Enabled, "%s on %s", tr.Name, tr.Table)
		}
	})

	assert.Equal(t, before, counts(t, owner), "nothing was changed")
	rep, err := ledger.Verify(ctx, db)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}

func TestMigrationsAreIdempotent(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	first, err := postgres.Open(ctx, url)
	require.NoError(t, err)
	seed(t, first)
	require.NoError(t, first.Close())

	second := open(t, url)
	require.NoError(t, second.Ping(ctx))
	acct, err := second.Account(ctx, ledger.Wallet("adv"))
	require.NoError(t, err)
	assert.Equal(t, int64(1000), acct.Balance, "the data survived the second Open")
	var versions int
	require.NoError(t, ownerConn(t, url).QueryRow(ctx, "SELECT count(*) FROM goose_db_version WHERE version_id > 0").Scan(&versions))
	files, err := fs.Glob(os.DirFS("."), "migrations/*.sql")
	require.NoError(t, err)
	assert.Equal(t, len(files), versions, "each embedded migration applied once")
}

// Several instances starting at once on one database: the advisory lock lets
// one migrate while the others wait.
func TestConcurrentOpen(t *testing.T) {
	url := pgtest.NewTestDatabase(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	dbs := make([]*postgres.DB, n)
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = postgres.Open(context.Background(), url) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.NoError(t, dbs[i].Close())
	}
}

func TestPoolSize(t *testing.T) {
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	assert.Equal(t, int32(max(8, 4*runtime.GOMAXPROCS(0))), db.Pool().Config().MaxConns)

	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	small := open(t, url+sep+"pool_max_conns=3")
	assert.Equal(t, int32(3), small.Pool().Config().MaxConns)
	assert.Equal(t, int32(3), small.ReadPoolSize(), "the read pool is as large as the write pool by default")

	reads, err := postgres.OpenWith(context.Background(), url+sep+"pool_max_conns=3", postgres.Options{ReadConns: 2})
	require.NoError(t, err)
	defer reads.Close()
	assert.Equal(t, int32(3), reads.Pool().Config().MaxConns)
	assert.Equal(t, int32(2), reads.ReadPoolSize())
}

// Reads run on a pool of their own: with every write connection held by a
// transaction that has not ended, a View, a Snapshot and the ledger's reads
// still answer (a fill's cache miss does not wait behind a batch of claims).
func TestReadsDoNotQueueBehindWrites(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db := open(t, url+sep+"pool_max_conns=1")
	holding, release := make(chan struct{}), make(chan struct{})
	written := make(chan error, 1)
	go func() {
		written <- db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := postgres.ExecIn(ctx, tx, `SELECT 1`); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // on failure too: closing the pool waits for the held connection
	<-holding
	// Generous: the reads fail rather than hang if they queue on the write
	// pool (whose one connection is held until release).
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, db.View(rctx, func(ctx context.Context, tx storage.Tx) error {
		return postgres.ExecIn(ctx, tx, `SELECT 1`)
	}), "View waited for the write pool")
	require.NoError(t, db.Snapshot(rctx, func(r ledger.Reader) error {
		_, err := r.Accounts(ctx)
		return err
	}), "Snapshot waited for the write pool")
	_, err := db.Accounts(rctx)
	require.NoError(t, err, "the ledger's reads waited for the write pool")
	free()
	require.NoError(t, <-written)
}

// The server's sessions run without JIT compilation unless the URL asks for
// it.
func TestSessionsWithoutJIT(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	show := func(db *postgres.DB) string {
		var v string
		require.NoError(t, db.Pool().QueryRow(ctx, "SHOW jit").Scan(&v))
		return v
	}
	assert.Equal(t, "off", show(open(t, url)))
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	assert.Equal(t, "on", show(open(t, url+sep+"jit=on")))
}

// Times come back as the UTC instant that went in, to the microsecond, from
// any zone.
func TestTimesRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := open(t, pgtest.NewTestDatabase(t))
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	at := time.Date(2026, 3, 29, 2, 30, 0, 123456789, zone)
	l := &ledger.Ledger{Store: db, Now: func() time.Time { return at }}
	op, err := ledger.TopUp("t1", "app", 100, "note")
	require.NoError(t, err)
	res, err := l.Post(ctx, op)
	require.NoError(t, err)
	lines, err := db.Lines(ctx, ledger.Wallet("app"), ledger.LineQuery{})
	require.NoError(t, err)
	require.Len(t, lines, 1)
	want, _ := res.Line(ledger.Wallet("app"))
	assert.Equal(t, want, lines[0])
	assert.Equal(t, at.UTC().Truncate(time.Microsecond), lines[0].CreatedAt)
	assert.Equal(t, time.UTC, lines[0].CreatedAt.Location())
	assert.Equal(t, lines[0].Hash, lines[0].ComputeHash())
}

// A large batch goes through the bulk forms of the lookups (semi-joins on
// unnest) and posts like a small one.
func TestLargeBatch(t *testing.T) {
	ctx := context.Background()
	db := open(t, pgtest.NewTestDatabase(t))
	l := &ledger.Ledger{Store: db, Now: time.Now}
	var ops []ledger.Operation
	for i := range 300 {
		op, err := ledger.TopUp(fmt.Sprintf("t%d", i), fmt.Sprintf("app%d", i%7), int64(100+i), "")
		require.NoError(t, err)
		ops = append(ops, op)
	}
	hold := ledger.Hold{ID: "ch_1", Advertiser: "app0", Amount: 50}
	op, err := ledger.EscrowHold("hold:ch_1", hold)
	require.NoError(t, err)
	ops = append(ops, op)
	_, errs, err := l.PostBatch(ctx, ops)
	require.NoError(t, err)
	for i, e := range errs {
		require.NoError(t, e, "op %d", i)
	}
	rep, err := ledger.Verify(ctx, db)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, 602, rep.Lines)
	holds, err := db.AllHolds(ctx)
	require.NoError(t, err)
	require.Len(t, holds, 1)
	assert.Equal(t, "", holds[0].Publisher)
	assert.Equal(t, "", holds[0].Resolution)
}

func TestInTxPassesErrorsThrough(t *testing.T) {
	ctx := context.Background()
	db := open(t, pgtest.NewTestDatabase(t))
	mine := apperr.New(apperr.InsufficientFunds, "nope")
	calls := 0
	err := db.InTx(ctx, func(ctx context.Context, tx ledger.Tx) error {
		calls++
		return fmt.Errorf("wrapped: %w", mine)
	})
	var got *apperr.Error
	require.ErrorAs(t, err, &got)
	assert.Same(t, mine, got)
	assert.Equal(t, 1, calls, "an application error is not retried")

	calls = 0
	err = db.InTx(ctx, func(ctx context.Context, tx ledger.Tx) error {
		calls++
		return fmt.Errorf("%w: always", ledger.ErrConflict)
	})
	assert.Equal(t, apperr.Conflict, apperr.Code(err))
	assert.Equal(t, 10, calls, "a conflict is retried, a bounded number of times")

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = db.InTx(cctx, func(ctx context.Context, tx ledger.Tx) error {
		calls++
		cancel()
		return ledger.ErrConflict
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, calls)
}

func BenchmarkLedger(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) ledger.Store {
		return open(b, pgtest.NewTestDatabase(b))
	})
}

// Transactions that create overlapping sets of new accounts, in batches,
// concurrently: LockAccounts never locks out of id order, so PostgreSQL
// reports no deadlock (each one would cost deadlock_timeout).
func TestCreatingAccountsNeverDeadlocks(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	l := &ledger.Ledger{Store: db, Now: time.Now}
	const workers, rounds, size = 8, 10, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for g := range workers {
		wg.Go(func() {
			for r := range rounds {
				var ops []ledger.Operation
				for i := range size {
					// Apps shared between workers and rounds, in a different
					// order for each: new accounts collide all the time.
					app := fmt.Sprintf("app%03d", (i*7+g*13+r*29)%(size*3))
					op, err := ledger.TopUp(fmt.Sprintf("t%d-%d-%d", g, r, i), app, 100, "")
					if err != nil {
						errs <- err
						return
					}
					ops = append(ops, op)
				}
				if _, _, err := l.PostBatch(ctx, ops); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var deadlocks int64
	require.NoError(t, ownerConn(t, url).QueryRow(ctx, "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&deadlocks))
	assert.Zero(t, deadlocks)
	rep, err := ledger.Verify(ctx, db)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, workers*rounds*size*2, rep.Lines)
}

func TestWebhooksStore(t *testing.T) {
	storetest.Webhooks(t, func(t *testing.T) storage.Store { return open(t, pgtest.NewTestDatabase(t)) })
}

func TestContactStore(t *testing.T) {
	storetest.Contact(t, func(t *testing.T) storage.Store { return open(t, pgtest.NewTestDatabase(t)) })
}

func TestTestModeStore(t *testing.T) {
	storetest.TestMode(t, func(t *testing.T) storage.Store { return open(t, pgtest.NewTestDatabase(t)) })
}

func TestRollups(t *testing.T) {
	storetest.Rollups(t, func(t *testing.T) storage.Store { return open(t, pgtest.NewTestDatabase(t)) },
		func(t *testing.T, s storage.Store, from int64) {
			require.NoError(t, postgres.RedoMigrations(context.Background(), s.(*postgres.DB), from))
		})
}
