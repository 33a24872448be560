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
	t.Run("ClockAndSecret", func(t *testing.T) { testClockAndSecret(t, newStore(t)) })
	t.Run("SecretAfterClock", func(t *testing.T) { testSecretAfterClock(t, newStore(t)) })
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

// testClockAndSecret: on a fresh store the secret comes first (a server
// starting without a configured one), then the clock adds up, by one
// instance or several at once; neither disturbs the other.
func testClockAndSecret(t *testing.T, s storage.Store) {
	assert.Zero(t, clockOffset(t, s), "a store never advanced reads 0")
	first := bytes.Repeat([]byte{1}, 32)
	assert.Equal(t, first, offerSecret(t, s, first), "no secret yet: the candidate is stored")
	assert.Zero(t, clockOffset(t, s), "the secret leaves the clock alone")

	assert.Equal(t, 48*time.Hour, advanceClock(t, s, 48*time.Hour))
	assert.Equal(t, 48*time.Hour+time.Minute, advanceClock(t, s, time.Minute))
	assert.Equal(t, 48*time.Hour+time.Minute, clockOffset(t, s), "what a restarted server reads")
	assert.Equal(t, first, offerSecret(t, s, bytes.Repeat([]byte{2}, 40)), "a secret stored: later candidates are ignored")

	// A refused transaction leaves the offset as it was.
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		if _, err := tx.AdvanceTestClock(ctx, time.Hour); err != nil {
			return err
		}
		return assert.AnError
	})
	require.ErrorIs(t, err, assert.AnError)
	assert.Equal(t, 48*time.Hour+time.Minute, clockOffset(t, s))

	// Instances advancing at once: no advance is lost.
	const workers, each = 4, 5
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				assert.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
					_, err := tx.AdvanceTestClock(ctx, time.Second)
					return err
				}))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 48*time.Hour+time.Minute+workers*each*time.Second, clockOffset(t, s))
	assert.Equal(t, first, offerSecret(t, s, bytes.Repeat([]byte{3}, 32)))
}

// testSecretAfterClock: a server with a configured secret advanced the
// clock (the row has no secret); one started later without a secret
// draws it then.
func testSecretAfterClock(t *testing.T, s storage.Store) {
	advanceClock(t, s, time.Hour)
	secret := bytes.Repeat([]byte{4}, 32)
	assert.Equal(t, secret, offerSecret(t, s, secret))
	assert.Equal(t, secret, offerSecret(t, s, bytes.Repeat([]byte{5}, 32)))
	assert.Equal(t, time.Hour, clockOffset(t, s))
}
