package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
)

// A statement cancelled by a cancel request nobody in the server made for
// it (here an operator's pg_cancel_backend; in CI once a cancel that seemed
// to arrive late) rolls its transaction back: the store runs the
// transaction again, and the caller sees it succeed, not a 57014.
func TestStrayCancelRunsAgain(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	db, err := postgres.Open(ctx, url)
	require.NoError(t, err)
	defer db.Close()
	op, err := ledger.TopUp("cancel:topup", "app_cancel", 100, "test")
	require.NoError(t, err)
	require.NoError(t, db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, _, err := ledger.Apply(ctx, tx, time.Now(), []ledger.Operation{op})
		return err
	}))
	account := ledger.Wallet("app_cancel")

	// An administrator's session holds the account's row, so the store's
	// transaction waits on it; then cancels that wait and lets go.
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	hold, err := admin.Begin(ctx)
	require.NoError(t, err)
	_, err = hold.Exec(ctx, `SELECT 1 FROM ledger_accounts WHERE id = $1 FOR UPDATE`, account)
	require.NoError(t, err)

	var runs atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			runs.Add(1)
			_, err := tx.LockAccounts(ctx, []string{account})
			return err
		})
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		var cancelled int
		require.NoError(t, hold.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&cancelled))
		if cancelled == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the store's transaction never waited on the held row")
		time.Sleep(10 * time.Millisecond)
	}
	// The cancelled run is over once a second one has begun; then the row
	// is let go and the second run takes it.
	for runs.Load() < 2 {
		require.True(t, time.Now().Before(deadline), "the cancelled transaction was not run again")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, hold.Rollback(ctx))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the store's transaction did not end")
	}
	require.EqualValues(t, 2, runs.Load())
}
