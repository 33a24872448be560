package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage"
)

// store is a backend. This file is the only one that knows the concrete
// backends.
type store = storage.Store

var (
	_ store = (*sqlite.DB)(nil)
	_ store = (*postgres.DB)(nil)
)

// openedStore is an open backend with a description safe to log.
type openedStore struct {
	store
	kind     string // "postgres" or "sqlite"
	location string // redacted URL or file path
}

// errNoDatabase means `ledger verify` was pointed at an SQLite file that does
// not exist (verifying must not create an empty database and call it valid).
var errNoDatabase = errors.New("no database")

// openStore opens PostgreSQL when a database URL is configured, else the
// embedded SQLite file under the data directory; both run their migrations.
// With mustExist, a missing SQLite file is errNoDatabase instead of being
// created.
func openStore(ctx context.Context, cfg config, mustExist bool) (*openedStore, error) {
	if cfg.DatabaseURL != "" {
		loc := redactURL(cfg.DatabaseURL)
		db, err := postgres.OpenWith(ctx, cfg.DatabaseURL, postgres.Options{ConnectTimeout: cfg.ConnectTimeout, StatementTimeout: cfg.StatementTimeout, ReadConns: cfg.ReadConns})
		if err != nil {
			return nil, fmt.Errorf("opening PostgreSQL at %s: %w", loc, err)
		}
		gc := cfg.GroupCommit
		gc.Off = gc.Off || cfg.GroupCommitAuto // measured slower on PostgreSQL (BENCHMARKS.md)
		db.SetGroupCommit(gc)
		return &openedStore{store: db, kind: "postgres", location: loc}, nil
	}
	path := cfg.sqlitePath()
	if mustExist {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s (check --data-dir / XPROMO_DATA_DIR)", errNoDatabase, path)
		}
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening SQLite at %s: %w", path, err)
	}
	db.SetGroupCommit(cfg.GroupCommit)
	return &openedStore{store: db, kind: "sqlite", location: path}, nil
}

// heldElsewhere tells whether wire.HoldInstance failed because another
// server process holds the store (SQLite: one server per database file).
func heldElsewhere(err error) bool { return errors.Is(err, sqlite.ErrInUse) }
