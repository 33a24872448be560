package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/sqlite"
)

// SQLite-specific ways around append-only: INSERT OR REPLACE and REPLACE INTO
// delete the old row without firing DELETE triggers, and an upsert updates in
// place. The BEFORE INSERT guards must refuse all of them.
func TestAppendOnlyRefusesReplace(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	l := &ledger.Ledger{Store: db, Now: func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }}
	op, err := ledger.TopUp("t1", "app", 5000, "")
	require.NoError(t, err)
	r, err := l.Post(ctx, op)
	require.NoError(t, err)
	line := r.Lines[1]

	for _, stmt := range []string{
		`INSERT OR REPLACE INTO ledger_lines SELECT id, operation_id, idx, account_id, seq, type, 999999, balance_after, counterparty_app_id, chain_id, note, earn_mode, created_at, prev_hash, hash FROM ledger_lines`,
		`REPLACE INTO ledger_lines SELECT id, operation_id, idx, account_id, seq, type, 999999, balance_after, counterparty_app_id, chain_id, note, earn_mode, created_at, prev_hash, hash FROM ledger_lines`,
		`INSERT INTO ledger_lines SELECT * FROM ledger_lines WHERE true ON CONFLICT (id) DO UPDATE SET amount = 999999`,
		`INSERT OR REPLACE INTO ledger_operations SELECT id, key, 'payout', request_hash, created_at FROM ledger_operations`,
		`INSERT OR REPLACE INTO ledger_accounts (id, balance, seq, head) VALUES ('wallet:app', 0, 0, x'00')`,
		`DELETE FROM ledger_lines`, // SQLite's TRUNCATE
		`DELETE FROM ledger_operations`,
		`DELETE FROM ledger_accounts`,
		`UPDATE ledger_lines SET amount = 1`,
		`UPDATE ledger_operations SET kind = 'payout'`,
	} {
		err := db.Exec(ctx, stmt)
		require.Error(t, err, stmt)
		assert.Regexp(t, `append-only|never (deleted|replaced)`, err.Error(), "refused by a guard, not by accident: %s", stmt)
	}
	lines, err := db.Lines(ctx, ledger.Wallet("app"), ledger.LineQuery{})
	require.NoError(t, err)
	require.Len(t, lines, 1)
	assert.Equal(t, line, lines[0], "the line is untouched")
	rep, err := ledger.Verify(ctx, db)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%v", rep.Violations)
}

func TestReopenKeepsLedger(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "xpromo.db")
	db, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	l := &ledger.Ledger{Store: db, Now: time.Now}
	op, _ := ledger.TopUp("t1", "app", 5000, "")
	_, err = l.Post(ctx, op)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	db, err = sqlite.Open(ctx, path) // migrations run again: a no-op
	require.NoError(t, err)
	defer db.Close()
	a, err := db.Account(ctx, ledger.Wallet("app"))
	require.NoError(t, err)
	assert.Equal(t, int64(5000), a.Balance)
}
