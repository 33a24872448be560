package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
)

func holderAlive(t *testing.T, db *postgres.DB, holder string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, db.Update(context.Background(), func(ctx context.Context, tx storage.Tx) (err error) {
		ok, err = tx.IdempotencyHolderAlive(ctx, holder)
		return err
	}))
	return ok
}

// An instance is alive while its session holds its advisory lock: from
// HoldInstance to release, and again after its connection was lost (the
// lock is taken again). Holders nobody holds are dead; claims recorded
// without a holder are not known dead.
func TestHoldInstance(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	db, err := postgres.Open(ctx, url)
	require.NoError(t, err)
	defer db.Close()

	assert.False(t, holderAlive(t, db, "inst_a"))
	assert.True(t, holderAlive(t, db, ""))
	release, err := db.HoldInstance(ctx, "inst_a")
	require.NoError(t, err)
	assert.True(t, holderAlive(t, db, "inst_a"))
	assert.False(t, holderAlive(t, db, "inst_b"))
	// Concurrent checks of one dead holder do not block each other.
	require.NoError(t, db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		dead, err := tx.IdempotencyHolderAlive(ctx, "inst_b")
		assert.False(t, dead)
		assert.False(t, holderAlive(t, db, "inst_b"), "while another transaction checked it")
		return err
	}))

	// The lock's session is killed (a network cut, an administrator): the
	// instance looks dead, then takes its lock again.
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	var killed int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_locks
WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&killed))
	require.Equal(t, 1, killed, "the lock's session")
	// pg_terminate_backend only signals: the session's lock goes when its
	// backend has exited. Until the instance locks again it looks dead.
	deadline := time.Now().Add(time.Minute)
	for holderAlive(t, db, "inst_a") {
		if time.Now().After(deadline) {
			t.Fatal("the killed session's lock was not released within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for !holderAlive(t, db, "inst_a") {
		if time.Now().After(deadline) {
			t.Fatal("the instance lock was not taken again within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}

	require.NoError(t, release())
	assert.Eventually(t, func() bool { return !holderAlive(t, db, "inst_a") }, 10*time.Second, 10*time.Millisecond, "released: dead")
}
