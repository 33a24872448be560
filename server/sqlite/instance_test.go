package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage"
)

// alive asks db whether holder may still run requests.
func alive(t *testing.T, db *sqlite.DB, holder string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, db.Update(context.Background(), func(ctx context.Context, tx storage.Tx) (err error) {
		ok, err = tx.IdempotencyHolderAlive(ctx, holder)
		return err
	}))
	return ok
}

// One server process holds the file: a second is refused until the first
// lets go; while it holds it, every other holder is known dead.
func TestHoldInstance(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "xpromo.db")
	a, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer a.Close()
	b, err := sqlite.Open(ctx, path) // as another process would
	require.NoError(t, err)
	defer b.Close()

	assert.True(t, alive(t, a, "inst_x"), "nobody holds the file: every holder may be alive")
	release, err := a.HoldInstance(ctx, "inst_a")
	require.NoError(t, err)
	_, err = b.HoldInstance(ctx, "inst_b")
	assert.True(t, errors.Is(err, sqlite.ErrInUse), "a second server on the file: %v", err)
	_, err = a.HoldInstance(ctx, "inst_a2")
	assert.True(t, errors.Is(err, sqlite.ErrInUse), "held twice by one process: %v", err)

	assert.True(t, alive(t, a, "inst_a"))
	assert.False(t, alive(t, a, "inst_x"))
	assert.False(t, alive(t, a, ""), "claims from before holders were recorded")

	require.NoError(t, release())
	require.NoError(t, release()) // once is enough
	assert.True(t, alive(t, a, "inst_x"))
	releaseB, err := b.HoldInstance(ctx, "inst_b")
	require.NoError(t, err)
	assert.False(t, alive(t, b, "inst_a"), "the previous server's claims are abandoned")
	require.NoError(t, releaseB())
}
