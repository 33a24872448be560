package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

func open(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "xpromo.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		db := open(t)
		return storetest.Harness{
			Store: db,
			Exec:  db.Exec,
			Tamper: func(ctx context.Context, stmt string) error {
				return tamper(ctx, db.Path(), stmt)
			},
		}
	})
}

// tamper edits the file the way anyone with access to it could: through
// another connection that first drops the append-only triggers. SQLite has no
// privileges to stop that, which is why the ledger is hash-chained.
func tamper(ctx context.Context, path, stmt string) error {
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer raw.Close()
	rows, err := raw.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'trigger'`)
	if err != nil {
		return err
	}
	var triggers []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		triggers = append(triggers, name)
	}
	rows.Close()
	for _, name := range triggers {
		if _, err := raw.ExecContext(ctx, `DROP TRIGGER `+name); err != nil {
			return err
		}
	}
	_, err = raw.ExecContext(ctx, stmt)
	return err
}

func BenchmarkLedger(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) ledger.Store {
		db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "xpromo.db"))
		require.NoError(b, err)
		b.Cleanup(func() { db.Close() })
		return db
	})
}

var _ storage.Store = (*sqlite.DB)(nil)

func TestWebhooksStore(t *testing.T) {
	storetest.Webhooks(t, func(t *testing.T) storage.Store { return open(t) })
}

func TestContactStore(t *testing.T) {
	storetest.Contact(t, func(t *testing.T) storage.Store { return open(t) })
}

func TestTestModeStore(t *testing.T) {
	storetest.TestMode(t, func(t *testing.T) storage.Store { return open(t) })
}

func TestRollups(t *testing.T) {
	storetest.Rollups(t, func(t *testing.T) storage.Store { return open(t) }, func(t *testing.T, s storage.Store, from int64) {
		require.NoError(t, sqlite.RedoMigrations(context.Background(), s.(*sqlite.DB), from))
	})
}
