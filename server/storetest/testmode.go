package storetest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/storage"
)

// TestMode runs the suite of what a test-mode server keeps across restarts
// (server/testmode: the test clock's offset, the drawn offer secret) on a
// fresh store from newStore: the sqlite and postgres packages call it.
func TestMode(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("ClockOffsetAddsUp", func(t *testing.T) { testClockOffsetAddsUp(t, newStore(t)) })
	t.Run("OfferSecretFirstWins", func(t *testing.T) { testOfferSecretFirstWins(t, newStore(t)) })
	t.Run("OfferSecretBeforeClock", func(t *testing.T) { testOfferSecretFirst(t, newStore(t)) })
	t.Run("ConcurrentAdvances", func(t *testing.T) { testConcurrentAdvances(t, newStore(t)) })
}

func clockOffset(t *testing.T, s storage.Store) time.Duration {
	t.Helper()
	var d time.Duration
	read(t, s, func(ctx context.Context, tx storage.Tx) (err error) {
		d, err = tx.TestClockOffset(ctx)
		return err
	})
	return d
}

func advanceClock(t *testing.T, s storage.Store, d time.Duration) time.Duration {
	t.Helper()
	var total time.Duration
	update(t, s, func(ctx context.Context, tx storage.Tx) (err error) {
		total, err = tx.AdvanceTestClock(ctx, d)
		return err
	})
	return total
}

func offerSecret(t *testing.T, s storage.Store, candidate []byte) []byte {
	t.Helper()
	var got []byte
	update(t, s, func(ctx context.Context, tx storage.Tx) (err error) {
		got, err = tx.TestOfferSecret(ctx, candidate)
		return err
	})
	return got
}

func testClockOffsetAddsUp(t *testing.T, s storage.Store) {
	assert.Zero(t, clockOffset(t, s), "a store never advanced reads 0")
	assert.Equal(t, 48*time.Hour, advanceClock(t, s, 48*time.Hour))
	assert.Equal(t, 48*time.Hour+time.Minute, advanceClock(t, s, time.Minute))
	assert.Equal(t, 48*time.Hour+time.Minute, clockOffset(t, s), "what a restarted server reads")

	// A refused transaction leaves the offset as it was.
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		if _, err := tx.AdvanceTestClock(ctx, time.Hour); err != nil {
			return err
		}
		return assert.AnError
	})
	require.ErrorIs(t, err, assert.AnError)
	assert.Equal(t, 48*time.Hour+time.Minute, clockOffset(t, s))
}

func testOfferSecretFirstWins(t *testing.T, s storage.Store) {
	// The clock advanced first: the row exists without a secret.
	advanceClock(t, s, time.Hour)
	first := bytes.Repeat([]byte{1}, 32)
	second := bytes.Repeat([]byte{2}, 40)
	assert.Equal(t, first, offerSecret(t, s, first), "no secret yet: the candidate is stored")
	assert.Equal(t, first, offerSecret(t, s, second), "a secret stored: later candidates are ignored")
	assert.Equal(t, time.Hour, clockOffset(t, s), "the secret leaves the clock alone")
	advanceClock(t, s, time.Hour)
	assert.Equal(t, first, offerSecret(t, s, second), "and the clock the secret")

}

func testOfferSecretFirst(t *testing.T, s storage.Store) {
	secret := bytes.Repeat([]byte{3}, 32)
	assert.Equal(t, secret, offerSecret(t, s, secret), "the secret may come before any advance")
	assert.Zero(t, clockOffset(t, s))
	assert.Equal(t, time.Minute, advanceClock(t, s, time.Minute))
	assert.Equal(t, secret, offerSecret(t, s, bytes.Repeat([]byte{4}, 32)))
}

func testConcurrentAdvances(t *testing.T, s storage.Store) {
	const workers, each = 4, 5
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				assert.NoError(t, advanceClockErr(s, time.Second))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, workers*each*time.Second, clockOffset(t, s), "no advance is lost")
}

func advanceClockErr(s storage.Store, d time.Duration) error {
	return s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.AdvanceTestClock(ctx, d)
		return err
	})
}
