// Package postgres is the production store: PostgreSQL through pgx v5's
// native pool.
//
// Open migrates the database as the URL's user (the owner of the tables),
// then opens a pool whose every connection runs SET ROLE xpromo_app, a
// least-privilege role that may only read and append to the ledger and move
// the account heads (migrations/00001_ledger.sql explains the layers that keep
// the ledger append-only).
//
// Write transactions run at READ COMMITTED and serialise on the account rows
// they touch (SELECT … FOR UPDATE in id order), which is what gives every
// account a total order for balance_after and the hash chain. Unique keys
// settle the remaining races (an operation key, a hold id, a hold's one
// resolution): the loser gets ledger.ErrConflict and InTx runs it again, when
// it sees the winner's rows.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	neturl "net/url"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/groupcommit"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
)

//go:embed migrations/*.sql
var migrations embed.FS

// AppRole is the role every application connection runs as.
const AppRole = "xpromo_app"

// DB is an open PostgreSQL store. It implements ledger.Store.
type DB struct {
	reader // ledger.Reader on the read pool
	// pool runs the writes (Update, InTx, group commit, the instance lock);
	// readPool runs View, Snapshot and the ledger reads, so that a read
	// never queues for a connection a write transaction holds (a fill's
	// cache miss behind a batch of claims: BENCHMARKS.md, "The fills'
	// cache misses"). Both connect to the primary: a read sees every
	// committed write.
	pool     *pgxpool.Pool
	readPool *pgxpool.Pool
	group    *groupcommit.Committer[storage.Tx]
	metrics  *metrics
}

var _ storage.Store = (*DB)(nil)

// Options are the connection settings Open applies when the URL does not
// set them itself (docs/operations.md, "High availability").
type Options struct {
	// ConnectTimeout bounds each connection attempt (per host of a
	// multi-host URL) and the pool's liveness ping of an idle connection;
	// the URL's connect_timeout wins. 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// StatementTimeout is the session's statement_timeout; 0 sets none.
	// The URL's statement_timeout (a runtime parameter) wins.
	StatementTimeout time.Duration
	// ReadConns is the size of the read pool (View, Snapshot, the ledger's
	// reads); 0 means the size of the write pool.
	ReadConns int
}

// DefaultConnectTimeout is Options.ConnectTimeout's default: without one a
// connection to a host that vanished waits for the kernel's TCP timeout.
const DefaultConnectTimeout = 5 * time.Second

// Open migrates the database at url and opens the application's pool, with
// the default Options.
func Open(ctx context.Context, url string) (*DB, error) {
	return OpenWith(ctx, url, Options{})
}

// OpenWith migrates the database at url and opens the application's pool.
//
// The URL's user must own the schema (or be able to create it): migrations
// run as that user. The write pool holds max(8, 4×GOMAXPROCS) connections
// unless the URL sets pool_max_conns, and the read pool as many unless
// opts.ReadConns sets its size; the other pool_* parameters of pgxpool apply
// to both.
// A multi-host URL (postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write)
// connects to the first host that is the primary.
func OpenWith(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parsing the database URL: %w", err)
	}
	settings := urlSettings(url)
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if !settings["connect_timeout"] {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	cfg.ConnConfig.DialFunc = dialer(cfg.ConnConfig.ConnectTimeout)
	if !settings["pool_ping_timeout"] {
		cfg.PingTimeout = opts.ConnectTimeout
	}
	if err := migrate(ctx, cfg.ConnConfig.Copy()); err != nil {
		return nil, err
	}
	if !settings["pool_max_conns"] {
		cfg.MaxConns = int32(max(8, 4*runtime.GOMAXPROCS(0)))
	}
	if opts.StatementTimeout > 0 && !settings["statement_timeout"] {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(opts.StatementTimeout.Milliseconds())
	}
	// No JIT compilation: the server's statements are index probes and
	// short scans, where compiling costs more than it saves, and a generic
	// plan whose estimate went wrong paid it on every run (37 to 191 ms a
	// claim on a year of history: BENCHMARKS.md, "A year at full scale").
	// The URL's jit wins.
	if !settings["jit"] {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	cfg.ConnConfig.OnNotice = onNotice
	// SET ROLE in AfterConnect, so that no pooled connection ever runs with
	// the owner's privileges. (A session can RESET ROLE, so this guards
	// against bugs, not against arbitrary SQL; a deployment that wants more
	// can connect as a login role that is only a member of xpromo_app.)
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "SET ROLE "+AppRole)
		return err
	}
	cfg.AfterRelease = keepConn
	readCfg := cfg.Copy()
	if opts.ReadConns > 0 {
		readCfg.MaxConns = int32(opts.ReadConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: opening the pool: %w", err)
	}
	readPool, err := pgxpool.NewWithConfig(ctx, readCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: opening the read pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		readPool.Close()
		return nil, fmt.Errorf("postgres: connecting as %s: %w", AppRole, err)
	}
	db := &DB{reader: reader{readPool}, pool: pool, readPool: readPool, metrics: newMetrics()}
	// Units run alone by default, as the server's --group-commit=auto runs
	// them on PostgreSQL: shared, a batch's units take turns on one
	// connection, which measured slower than PostgreSQL's own flushing of
	// concurrent commits together (BENCHMARKS.md). SetGroupCommit with Off
	// false turns sharing on.
	db.SetGroupCommit(groupcommit.Config{Off: true})
	return db, nil
}

// urlSettings reports which settings a database URL (or key=value DSN)
// names, so that Options never override what the operator wrote.
func urlSettings(raw string) map[string]bool {
	out := map[string]bool{}
	if u, err := neturl.Parse(raw); err == nil && u.Scheme != "" {
		for k := range u.Query() {
			out[k] = true
		}
		return out
	}
	for _, f := range strings.Fields(raw) {
		if k, _, ok := strings.Cut(f, "="); ok {
			out[k] = true
		}
	}
	return out
}

// dialer dials with a timeout and TCP keepalives, and bounds the time sent
// data may stay unacknowledged (TCP_USER_TIMEOUT): a connection to a host
// that vanished (a partition, a dead VM) fails in seconds, not after the
// kernel's retransmissions (about 15 minutes), also for background work
// that has no deadline of its own.
func dialer(timeout time.Duration) pgconn.DialFunc {
	d := &net.Dialer{
		Timeout:         timeout,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 3},
		Control: func(network, address string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = setUserTimeout(fd, tcpUserTimeout)
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
	return d.DialContext
}

// tcpUserTimeout is TCP_USER_TIMEOUT of the pool's connections.
const tcpUserTimeout = 20 * time.Second

// migrate runs the embedded migrations through database/sql, as the URL's
// user. A session advisory lock (per database) lets several instances start
// at once: one migrates, the others wait and then find nothing to do.
func migrate(ctx context.Context, cfg *pgx.ConnConfig) error {
	sqlDB := stdlib.OpenDB(*cfg)
	defer sqlDB.Close()
	sqlDB.SetMaxOpenConns(2)
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300), lock.WithUnlockTimeout(1, 60))
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, sub, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("postgres: migrating %s: %w", describe(cfg), err)
	}
	return nil
}

func describe(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("database %q on %s:%d as %q", cfg.Database, cfg.Host, cfg.Port, cfg.User)
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	return db.pool.Ping(ctx)
}

// Close closes both pools.
func (db *DB) Close() error {
	db.pool.Close()
	db.readPool.Close()
	return nil
}

// Pool returns the application's write pool (every connection runs as
// xpromo_app), for the server's other tables.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Exec runs one statement the way the application does: on the pool, as
// xpromo_app. Tests use it to prove the append-only layers hold.
func (db *DB) Exec(ctx context.Context, query string) error {
	_, err := db.pool.Exec(ctx, query)
	return wrap(err, "exec")
}

const maxAttempts = 10

// ledgerCommitters is how many shared transactions the ledger's group
// commit keeps in flight (ledger.WriteConcurrency). Batches in flight never
// share an account (ledger/group.go), so they do not wait on each other's
// locks, and their COMMITs share WAL flushes: on 2 cores 4 measured 19 to
// 48% above the 2 of old (whose batches queued on each other's platform
// shards), above 3, and no slower than 6 or 8 (BENCHMARKS.md, "Group commit
// on PostgreSQL").
const ledgerCommitters = 4

// WriteConcurrency implements ledger.WriteConcurrency.
func (db *DB) WriteConcurrency() int { return ledgerCommitters }

// InTx implements ledger.Store: fn runs in one READ COMMITTED transaction,
// again (up to maxAttempts in all, with a short jittered backoff) when it
// loses a race, a deadlock or a serialization failure, and right away after
// creating the accounts LockAccounts found missing.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx ledger.Tx) error) error {
	return db.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return fn(ctx, tx) })
}

// Update implements storage.Store, with InTx's retries. Under
// groupcommit.Allow, fn may share its transaction with other callers'
// (SetGroupCommit).
func (db *DB) Update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	if groupcommit.Allowed(ctx) {
		return db.group.Do(ctx, fn)
	}
	return db.update(ctx, fn)
}

// Group commit defaults: a batch's units run one after the other on its
// connection, so several batches run at once; each unit's SAVEPOINT is a
// subtransaction, and PostgreSQL caches 64 of them per transaction before
// every snapshot elsewhere gets slower, hence the bound on a batch.
const (
	groupInFlight = 4
	groupMaxBatch = 32
)

// SetGroupCommit configures the group commit of units allowed to share a
// transaction (package groupcommit); zero fields take the defaults above.
// Call it before the store is used.
func (db *DB) SetGroupCommit(cfg groupcommit.Config) {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = groupMaxBatch
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = groupInFlight
	}
	db.group = groupcommit.New(cfg, groupcommit.Store[storage.Tx]{
		Begin:     db.beginShared,
		Alone:     db.update,
		Retryable: sharedRetryable,
		Unknown:   commitUnknown,
	})
}

func (db *DB) update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	start := time.Now()
	conflicts, outages := 0, 0
	for {
		err := db.inTx(ctx, db.pool, beginSQL, fn)
		if err == nil {
			return nil
		}
		var u *errUnavailable
		if errors.As(err, &u) {
			// Nothing committed (COMMIT was not sent): run fn again once
			// the database may be back, within the caller's deadline.
			outages++
			if !u.rerun || !pause(ctx, start, outages) {
				return err
			}
			db.metrics.retry("unavailable")
			continue
		}
		if !retryable(err) {
			return err
		}
		conflicts++
		if conflicts == maxAttempts {
			return apperr.New(apperr.Conflict, "the ledger transaction conflicted %d times: %v", conflicts, err)
		}
		var m *missingAccounts
		if errors.As(err, &m) {
			db.metrics.retry("missing_accounts")
			continue // the accounts exist now: no one to wait for
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && strayCancel(pe) {
			if ctx.Err() != nil {
				return ctx.Err() // the caller's own cancel, not a stray one
			}
			db.metrics.retry("canceled")
		} else {
			db.metrics.retry("conflict")
		}
		t := time.NewTimer(backoff(conflicts))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// backoff grows from 1–2 ms on the first retry to at most 20 ms; the jitter
// keeps the losers of one race from colliding again in step.
func backoff(attempt int) time.Duration {
	base := min(20*time.Millisecond, time.Millisecond<<(attempt-1))
	return min(20*time.Millisecond, base+rand.N(base+1))
}

// pause waits before the n-th run of a transaction the database's
// unavailability failed: 50 ms growing to 1 s, jittered. It reports false,
// at once, when the wait would end past the caller's deadline (its context's,
// or storage.RetryDeadline's) or unavailableFor after start.
func pause(ctx context.Context, start time.Time, n int) bool {
	base := min(time.Second, 50*time.Millisecond<<min(n-1, 5))
	d := base/2 + rand.N(base/2+1)
	limit := start.Add(unavailableFor)
	if dl, ok := ctx.Deadline(); ok && dl.Before(limit) {
		limit = dl
	}
	if dl, ok := storage.RetryDeadline(ctx); ok && dl.Before(limit) {
		limit = dl
	}
	if time.Now().Add(d).After(limit) {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// View implements storage.Store: fn runs in a REPEATABLE READ, READ ONLY
// transaction (one snapshot; writes fail). It runs again only when the
// database was unavailable before fn started (fn may have answered part of
// a request by then).
func (db *DB) View(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	start := time.Now()
	for n := 1; ; n++ {
		called := false
		err := db.inTx(ctx, db.readPool, beginReadOnlySQL, func(ctx context.Context, tx storage.Tx) error {
			called = true
			return fn(ctx, tx)
		})
		var u *errUnavailable
		if called || !errors.As(err, &u) || !pause(ctx, start, n) {
			return err
		}
		db.metrics.retry("unavailable")
	}
}

func (db *DB) inTx(ctx context.Context, pool *pgxpool.Pool, begin string, fn func(ctx context.Context, tx storage.Tx) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		err = wrap(err, "acquiring a connection")
		if u := db.classify(ctx, nil, err, true); u != nil {
			return u
		}
		return err
	}
	defer conn.Release()
	t := &tx{conn: conn.Conn(), begin: begin}
	defer t.rollback(ctx) // no-op once committed; also runs on panic
	err = fn(ctx, t)
	if err == nil {
		cctx, cancel := commitContext(ctx)
		err = wrap(t.commit(cctx), "commit")
		cancel()
		switch {
		case err != nil && t.commitSent && commitUnknown(err) && ctx.Err() == nil:
			return db.classify(ctx, conn.Conn(), &errUnavailable{class: classCommitUnknown, err: err}, false)
		case err != nil && t.commitSent && commitUnknown(err):
			// The caller's deadline cut the COMMIT off: as unknown.
			db.metrics.fail(classCommitUnknown)
			return &errUnavailable{class: classCommitUnknown, err: err}
		case err == nil && conn.Conn().PgConn().CustomData()[syncCancelledKey] != nil:
			delete(conn.Conn().PgConn().CustomData(), syncCancelledKey)
			return db.classify(ctx, conn.Conn(), &errUnavailable{class: classCommitUnknown, err: errSyncCancelled}, false)
		}
	}
	if err != nil {
		if u := db.classify(ctx, conn.Conn(), err, true); u != nil {
			return u
		}
		var m *missingAccounts
		if errors.As(err, &m) {
			// Create them on their own, holding no lock, then let InTx run
			// fn again. Concurrent creators of one account wait for each
			// other in id order and never deadlock.
			t.rollback(ctx)
			if _, cerr := t.conn.Exec(ctx, createAccounts, m.ids, ledger.GenesisHash); cerr != nil {
				// The database lost here is an outage like any other (run
				// again once it is back), not a failure of the request: a
				// unit of work's request would otherwise answer this
				// missingAccounts error as a 500 (issue 31).
				cerr = wrap(cerr, "creating accounts")
				if u := db.classify(ctx, t.conn, cerr, true); u != nil {
					return u
				}
				return cerr
			}
		}
		return err
	}
	return nil
}

// commitContext bounds a unit of work's COMMIT by its request's deadline
// (storage.RetryDeadline): the unit's transaction runs detached from the
// request's cancellation, and a COMMIT sent to a primary that hangs (frozen,
// black-holed) would otherwise wait past --request-timeout for the kernel
// to give up. Cut off, it is a COMMIT without an answer: unknown (issue 31).
func commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := storage.RetryDeadline(ctx); ok {
		return context.WithDeadline(ctx, dl)
	}
	return ctx, func() {}
}

// classify returns err as an *errUnavailable when the database failed
// (counted by class), else nil. A connection that answered from a read-only
// node is marked for the pool to drop (keepConn).
func (db *DB) classify(ctx context.Context, conn *pgx.Conn, err error, rerun bool) *errUnavailable {
	gone := conn == nil || conn.IsClosed()
	// A statement that ran past statement_timeout would only do so again.
	u := unavailable(ctx, err, gone, rerun && unavailableClass(ctx, err, gone) != classTimeout)
	if u == nil {
		return nil
	}
	db.metrics.fail(u.class)
	if conn != nil && u.class == classReadOnly {
		conn.PgConn().CustomData()[dropKey] = true
	}
	return u
}

// SQLSTATEs the store acts on.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeQueryCanceled        = "57014"
	codeInsufficientPriv     = "42501"
	// Text the database cannot hold: a NUL or bytes that are not UTF-8
	// (character_not_in_repertoire), or a \u0000 escape in JSON
	// (untranslatable_character). The HTTP edge refuses such input first;
	// this keeps anything that slips past it a 4xx rather than a 500.
	codeCharacterNotInRepertoire = "22021"
	codeUntranslatableCharacter  = "22P05"
)

// conflictConstraints are the unique constraints whose violation means that a
// concurrent transaction won a race InTx resolves by running fn again: the
// operation key, a hold id, and a hold's one resolution; a pair of apps'
// one open complaint; a checkout's refund or dispute movement.
var conflictConstraints = map[string]bool{
	"ledger_operations_key_key": true,
	"escrow_holds_pkey":         true,
	"escrow_resolutions_pkey":   true,
	"complaints_one_open":       true,
	// A refund's or dispute's movement (its ledger key): the session row
	// lock serialises them, this is the backstop.
	"checkout_reversals_pkey": true,
}

// ledgerTables are the tables whose refused changes are ledger_append_only.
var ledgerTables = map[string]bool{
	"ledger_accounts": true, "ledger_operations": true, "ledger_lines": true,
	"escrow_holds": true, "escrow_resolutions": true,
}

func retryable(err error) bool {
	if errors.Is(err, ledger.ErrConflict) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == codeSerializationFailure || pe.Code == codeDeadlockDetected || strayCancel(pe)
	}
	return false
}

// strayCancel reports a statement cancelled by a cancel request (not by
// statement_timeout, which would only strike again): PostgreSQL rolled the
// transaction back, so running it again is safe. When the caller's own
// context was cancelled, the retry loop ends on it; otherwise nobody here
// asked for it: an operator's pg_cancel_backend, or a cancel request that
// reached the backend after the statement it was sent for had ended (the
// protocol cancels whatever the backend runs when it arrives). CI met one
// once (TestUnitsExactlyOnce, 2026-12-04, under load): "locking accounts:
// canceling statement due to user request", with no context cancelled.
func strayCancel(pe *pgconn.PgError) bool {
	return pe.Code == codeQueryCanceled && !strings.Contains(pe.Message, "statement timeout")
}

// wrap adds context to a driver error and maps the ones the ledger knows:
// a lost race on a unique key becomes ledger.ErrConflict, a change the
// append-only layers refused becomes apperr.LedgerAppendOnly, and text the
// database cannot store becomes apperr.InvalidEncoding. The driver's
// *pgconn.PgError stays reachable with errors.As.
func wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == codeUniqueViolation && conflictConstraints[pe.ConstraintName]:
			return fmt.Errorf("%w: %s: %w", ledger.ErrConflict, what, err)
		case pe.Code == codeInsufficientPriv && appendOnlyRefusal(pe):
			return &Error{App: &apperr.Error{Code: apperr.LedgerAppendOnly, Message: pe.Message}, Err: err}
		case pe.Code == codeCharacterNotInRepertoire || pe.Code == codeUntranslatableCharacter:
			return &Error{App: apperr.New(apperr.InvalidEncoding, "the text must be valid UTF-8 without NUL"), Err: err}
		}
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// appendOnlyRefusal tells whether an insufficient_privilege error comes from
// the ledger's triggers (they name their table) or from the ledger tables'
// privileges ("permission denied for table …").
func appendOnlyRefusal(pe *pgconn.PgError) bool {
	if ledgerTables[pe.TableName] {
		return true
	}
	table, ok := strings.CutPrefix(pe.Message, "permission denied for table ")
	return ok && ledgerTables[table]
}

// Error is an application error together with the database error behind it;
// errors.As finds either (*apperr.Error or *pgconn.PgError).
type Error struct {
	App *apperr.Error
	Err error
}

func (e *Error) Error() string   { return e.App.Error() }
func (e *Error) Unwrap() []error { return []error{e.App, e.Err} }
