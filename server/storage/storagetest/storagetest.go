// Package storagetest runs a test on every store: embedded SQLite and
// PostgreSQL (a fresh database per test, from XPROMO_TEST_DATABASE_URL).
package storagetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage"
)

// Each runs fn as a subtest per store, each with a fresh, empty store.
func Each(t *testing.T, fn func(t *testing.T, s storage.Store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

// SQLite opens a fresh SQLite store in a temporary directory.
func SQLite(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "xpromo.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Postgres opens a fresh PostgreSQL store in a database of its own, dropped
// after the test. It skips the test when XPROMO_TEST_DATABASE_URL is unset
// (make test always sets it).
func Postgres(t testing.TB) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), pgtest.NewTestDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
