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
	"runtime"
	"strings"
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
	reader // ledger.Reader on the pool
	pool   *pgxpool.Pool
	group  *groupcommit.Committer[storage.Tx]
}

var _ storage.Store = (*DB)(nil)

// Open migrates the database at url and opens the application's pool.
//
// The URL's user must own the schema (or be able to create it): migrations
// run as that user. The pool holds max(8, 4×GOMAXPROCS) connections unless
// the URL sets pool_max_conns; the other pool_* parameters of pgxpool apply.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parsing the database URL: %w", err)
	}
	if err := migrate(ctx, cfg.ConnConfig.Copy()); err != nil {
		return nil, err
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = int32(max(8, 4*runtime.GOMAXPROCS(0)))
	}
	// SET ROLE in AfterConnect, so that no pooled connection ever runs with
	// the owner's privileges. (A session can RESET ROLE, so this guards
	// against bugs, not against arbitrary SQL; a deployment that wants more
	// can connect as a login role that is only a member of xpromo_app.)
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "SET ROLE "+AppRole)
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: opening the pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connecting as %s: %w", AppRole, err)
	}
	db := &DB{reader: reader{pool}, pool: pool}
	// Units run alone by default, as the server's --group-commit=auto runs
	// them on PostgreSQL: shared, a batch's units take turns on one
	// connection, which measured slower than PostgreSQL's own flushing of
	// concurrent commits together (BENCHMARKS.md). SetGroupCommit with Off
	// false turns sharing on.
	db.SetGroupCommit(groupcommit.Config{Off: true})
	return db, nil
}

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

// Close closes the pool.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// Pool returns the application's pool (every connection runs as xpromo_app),
// for the server's other tables.
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
	for attempt := 1; ; attempt++ {
		err := db.inTx(ctx, beginSQL, fn)
		if err == nil || !retryable(err) {
			return err
		}
		if attempt == maxAttempts {
			return apperr.New(apperr.Conflict, "the ledger transaction conflicted %d times: %v", attempt, err)
		}
		var m *missingAccounts
		if errors.As(err, &m) {
			continue // the accounts exist now: no one to wait for
		}
		t := time.NewTimer(backoff(attempt))
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

// View implements storage.Store: fn runs in a REPEATABLE READ, READ ONLY
// transaction (one snapshot; writes fail). Nothing is retried.
func (db *DB) View(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	return db.inTx(ctx, beginReadOnlySQL, fn)
}

func (db *DB) inTx(ctx context.Context, begin string, fn func(ctx context.Context, tx storage.Tx) error) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return wrap(err, "acquiring a connection")
	}
	defer conn.Release()
	t := &tx{conn: conn.Conn(), begin: begin}
	defer t.rollback(ctx) // no-op once committed; also runs on panic
	err = fn(ctx, t)
	if err == nil {
		err = wrap(t.commit(ctx), "commit")
	}
	if err != nil {
		var m *missingAccounts
		if errors.As(err, &m) {
			// Create them on their own, holding no lock, then let InTx run
			// fn again. Concurrent creators of one account wait for each
			// other in id order and never deadlock.
			t.rollback(ctx)
			if _, cerr := t.conn.Exec(ctx, createAccounts, m.ids, ledger.GenesisHash); cerr != nil {
				return wrap(cerr, "creating accounts")
			}
		}
		return err
	}
	return nil
}

// SQLSTATEs the store acts on.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
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
		return pe.Code == codeSerializationFailure || pe.Code == codeDeadlockDetected
	}
	return false
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
