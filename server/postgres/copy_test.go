package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
)

// A batch large enough for its lines to go by COPY (1,002 lines) loses a race
// to another transaction that locked one of its accounts first and commits
// while the batch waits for that lock: on an operation key, and on a hold's
// one resolution. The batch read the key (or the hold) before that commit,
// so its insert of the operations (or resolutions) fails on a unique index;
// that must surface as ledger.ErrConflict, so that InTx runs the batch
// again, which then sees the winner's row, and posts everything else
// exactly once.
func TestCopyAppendLosesRace(t *testing.T) {
	hold := ledger.Hold{ID: "ch_race", Advertiser: "racer", Publisher: "pub", Amount: 5}
	opens, err := ledger.EscrowHold("hold", hold)
	require.NoError(t, err)
	// A second hold keeps the escrow funded after the winner's release, so
	// that the loser passes the balance check and reaches the resolution's
	// unique index.
	other, err := ledger.EscrowHold("other", ledger.Hold{ID: "ch_other", Advertiser: "racer", Publisher: "pub", Amount: 5})
	require.NoError(t, err)
	release, err := ledger.EscrowRelease("release", hold)
	require.NoError(t, err)
	again, err := ledger.EscrowRelease("release-again", hold)
	require.NoError(t, err)
	race := mustTopUp(t, "race", "racer", 777)

	t.Run("key", func(t *testing.T) {
		last := losesRace(t, race, race)
		require.NoError(t, last.err)
		assert.True(t, last.res.Replayed, "the key the other transaction committed is replayed")
	})
	t.Run("hold resolution", func(t *testing.T) {
		last := losesRace(t, release, again, opens, other)
		assert.Equal(t, apperr.HoldAlreadyResolved, apperr.Code(last.err))
	})
}

type posted struct {
	res ledger.Result
	err error
}

// losesRace commits winner in a transaction that holds its account locks
// until a batch of 500 top-ups and loser waits for one of them, and returns
// loser's outcome in the batch. setup is posted first.
func losesRace(t *testing.T, winner, loser ledger.Operation, setup ...ledger.Operation) posted {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	owner := ownerConn(t, url)
	l := &ledger.Ledger{Store: db, Now: time.Now}

	var ops []ledger.Operation
	warm := append([]ledger.Operation{mustTopUp(t, "warm", "racer", 100)}, setup...)
	for i := range 500 {
		ops = append(ops, mustTopUp(t, fmt.Sprintf("t%d", i), fmt.Sprintf("app%d", i%7), int64(100+i)))
		warm = append(warm, mustTopUp(t, fmt.Sprintf("warm%d", i), fmt.Sprintf("app%d", i%7), 1))
	}
	ops = append(ops, loser)
	// Every account must exist before the race: a missing one makes the
	// batch create it and start again, and the new start would find the
	// winner committed rather than race with it.
	_, errs, err := l.PostBatch(ctx, warm)
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}

	locked, proceed, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if _, errs, err := ledger.Apply(ctx, tx, time.Now(), []ledger.Operation{winner}); err != nil || errs[0] != nil {
				return fmt.Errorf("apply: %v %v", err, errs)
			}
			close(locked)
			<-proceed
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
	// Let the batch block on the winner's account lock, then commit it.
	waitForLockWait(t, owner)
	close(proceed)
	require.NoError(t, <-done)

	got := <-batch
	require.NoError(t, got.err)
	require.False(t, got.errs[len(ops)-1] == nil && !got.results[len(ops)-1].Replayed, "the loser posted")
	n := len(ops) - 1
	for i := range n {
		require.NoError(t, got.errs[i], "op %d", i)
		assert.False(t, got.results[i].Replayed)
	}

	rep, err := ledger.Verify(ctx, db)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	// Every operation here has two lines; the loser writes none.
	lines := 2 * (len(warm) + 1 + n)
	assert.Equal(t, lines, rep.Lines, "the set-up, the winner and the batch, each once")
	return posted{got.results[n], got.errs[n]}
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
