package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
)

// A batch large enough for its lines to go by COPY (302 lines) loses a race
// on an operation key: the other transaction locked the key's account first
// and commits the key while the batch waits. The batch's key lookup ran
// before that commit, so its insert of the operations fails on the key's
// unique index; that must surface as ledger.ErrConflict, so that InTx runs
// the batch again, which then replays the key, and posts everything else
// exactly once.
func TestCopyAppendLosesKeyRace(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	owner := ownerConn(t, url)
	l := &ledger.Ledger{Store: db, Now: time.Now}

	race, err := ledger.TopUp("race", "racer", 777, "")
	require.NoError(t, err)
	var ops, warm []ledger.Operation
	for i := range 150 {
		ops = append(ops, mustTopUp(t, fmt.Sprintf("t%d", i), fmt.Sprintf("app%d", i%7), int64(100+i)))
		warm = append(warm, mustTopUp(t, fmt.Sprintf("warm%d", i), fmt.Sprintf("app%d", i%7), 1))
	}
	ops = append(ops, race)
	// Every account must exist before the race: a missing one makes the
	// batch create it and start again, and the new start would find the key
	// committed rather than race for it.
	_, errs, err := l.PostBatch(ctx, append(warm, mustTopUp(t, "warm", "racer", 1)))
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}

	locked, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if _, errs, err := ledger.Apply(ctx, tx, time.Now(), []ledger.Operation{race}); err != nil || errs[0] != nil {
				return fmt.Errorf("apply: %v %v", err, errs)
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked

	type outcome struct {
		results []ledger.Result
		errs    []error
		err     error
	}
	batch := make(chan outcome, 1)
	go func() {
		r, e, err := l.PostBatch(ctx, ops)
		batch <- outcome{r, e, err}
	}()
	// Let the batch block on the racer's account lock, then commit the key.
	waitForLockWait(t, owner)
	close(release)
	require.NoError(t, <-done)

	got := <-batch
	require.NoError(t, got.err)
	for i, e := range got.errs {
		require.NoError(t, e, "op %d", i)
	}
	assert.True(t, got.results[len(ops)-1].Replayed, "the key the other transaction committed is replayed")
	for _, r := range got.results[:len(ops)-1] {
		assert.False(t, r.Replayed)
	}

	rep, err := ledger.Verify(ctx, db)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, 2*(151+1+150), rep.Lines, "the warm-up, race and the batch, each once")
}

func mustTopUp(t *testing.T, key, app string, amount int64) ledger.Operation {
	t.Helper()
	op, err := ledger.TopUp(key, app, amount, "")
	require.NoError(t, err)
	return op
}

// waitForLockWait returns once a backend of this database waits for a lock.
func waitForLockWait(t *testing.T, owner *pgx.Conn) {
	t.Helper()
	for range 6000 {
		var n int
		require.NoError(t, owner.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no backend ever waited for a lock")
}
