// Package sqlite is the embedded store: pure-Go SQLite (modernc.org/sqlite)
// in WAL mode with one writer connection, so `make run` needs nothing but Go.
//
// Writes go through a single connection that starts every transaction with
// BEGIN IMMEDIATE (SQLite allows one writer; taking the lock up front means a
// transaction never fails half-way on SQLITE_BUSY). Reads use a separate pool
// of read-only connections, which WAL lets run beside the writer.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/groupcommit"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is an open SQLite store.
type DB struct {
	reader   // ledger.Reader on the read pool
	path     string
	writer   *sql.DB // one connection: SQLite has one writer
	readPool *sql.DB
	owner    owner // the server instance that holds the file (HoldInstance)
	group    *groupcommit.Committer[storage.Tx]
}

// Open opens (creating if needed) the database file at path and migrates it.
func Open(ctx context.Context, path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sqlite: creating data dir: %w", err)
	}
	// synchronous=FULL: in WAL mode NORMAL can lose the last transactions on
	// power loss, which is not acceptable for money.
	pragmas := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)", "foreign_keys(ON)"} {
		pragmas.Add("_pragma", p)
	}
	writer, err := sql.Open("sqlite", "file:"+path+"?"+pragmas.Encode()+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetConnMaxIdleTime(0)
	writer.SetConnMaxLifetime(0)

	pragmas.Add("_pragma", "query_only(1)")
	readPool, err := sql.Open("sqlite", "file:"+path+"?"+pragmas.Encode())
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	readPool.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))

	db := &DB{reader: reader{readPool}, path: path, writer: writer, readPool: readPool}
	db.SetGroupCommit(groupcommit.Config{})
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) migrate(ctx context.Context) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db.writer, mustSub(migrations, "migrations"))
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("sqlite: migrating %s: %w", db.path, err)
	}
	return nil
}

// Path returns the database file's path.
func (db *DB) Path() string { return db.path }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	return db.readPool.PingContext(ctx)
}

// Close closes both pools.
func (db *DB) Close() error {
	return errors.Join(db.readPool.Close(), db.writer.Close())
}

// Exec runs a statement on the writer connection. Tests use it to prove the
// append-only triggers hold.
func (db *DB) Exec(ctx context.Context, query string) error {
	_, err := db.writer.ExecContext(ctx, query)
	return err
}

const maxAttempts = 10

// InTx implements ledger.Store.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx ledger.Tx) error) error {
	return db.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return fn(ctx, tx) })
}

// Update implements storage.Store: fn runs in a write transaction, retried on
// conflicts. Under groupcommit.Allow, fn may share its transaction with
// other callers' (SetGroupCommit).
func (db *DB) Update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	if groupcommit.Allowed(ctx) {
		return db.group.Do(ctx, fn)
	}
	return db.update(ctx, fn)
}

// groupMaxBatch: SQLite's one writer runs the units one after the other
// anyway, so a batch may be long; the bound keeps the first unit's wait
// short.
const groupMaxBatch = 256

// SetGroupCommit configures the group commit of units allowed to share a
// transaction (package groupcommit); zero fields take SQLite's defaults: one
// shared transaction at a time (there is one writer), up to 256 units in it.
// Call it before the store is used.
func (db *DB) SetGroupCommit(cfg groupcommit.Config) {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = groupMaxBatch
	}
	cfg.InFlight = 1
	db.group = groupcommit.New(cfg, groupcommit.Store[storage.Tx]{
		Begin:     db.beginShared,
		Alone:     db.update,
		Retryable: retryable,
		// A COMMIT that failed (an I/O error while syncing the WAL) may or
		// may not be durable: its units are answered the error, as a lone
		// transaction's caller would be.
		Unknown: func(error) bool { return true },
	})
}

func (db *DB) update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.inTx(ctx, fn)
		if err == nil || !retryable(err) {
			return err
		}
		if attempt == maxAttempts {
			return apperr.New(apperr.Conflict, "transaction conflicted %d times: %v", attempt, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * time.Millisecond):
		}
	}
}

func (db *DB) inTx(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	sqlTx, err := db.writer.BeginTx(ctx, nil) // BEGIN IMMEDIATE, from _txlock
	if err != nil {
		return wrap(err)
	}
	if err := fn(ctx, &tx{tx: sqlTx, owner: db.ownerID()}); err != nil {
		sqlTx.Rollback()
		return err
	}
	return wrap(sqlTx.Commit())
}

// View implements storage.Store: fn runs in a read transaction on the read
// pool, a snapshot that never waits for the writer.
func (db *DB) View(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	sqlTx, err := db.readPool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return wrap(err)
	}
	defer sqlTx.Rollback()
	return fn(ctx, &tx{tx: sqlTx, owner: db.ownerID()})
}

func retryable(err error) bool {
	if errors.Is(err, ledger.ErrConflict) {
		return true
	}
	var e *sqlite.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// wrap turns driver errors into application errors where one applies.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	var e *sqlite.Error
	if errors.As(err, &e) {
		switch e.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", ledger.ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_TRIGGER:
			return &apperr.Error{Code: apperr.LedgerAppendOnly, Message: err.Error()}
		}
	}
	return fmt.Errorf("sqlite: %w", err)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// null maps "" to SQL NULL for the optional text columns.
func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}
