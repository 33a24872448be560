package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Test mode's one row (server/testmode, migration 00028) on SQLite.

func (t *tx) TestClockOffset(ctx context.Context) (time.Duration, error) {
	var ns int64
	err := t.tx.QueryRowContext(ctx, `SELECT clock_offset_ns FROM test_mode WHERE id = 1`).Scan(&ns)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return time.Duration(ns), wrap(err)
}

func (t *tx) AdvanceTestClock(ctx context.Context, d time.Duration) (time.Duration, error) {
	var ns int64
	err := t.tx.QueryRowContext(ctx, `INSERT INTO test_mode (id, clock_offset_ns) VALUES (1, ?)
ON CONFLICT (id) DO UPDATE SET clock_offset_ns = test_mode.clock_offset_ns + excluded.clock_offset_ns
RETURNING clock_offset_ns`, int64(d)).Scan(&ns)
	return time.Duration(ns), wrap(err)
}

func (t *tx) TestOfferSecret(ctx context.Context, candidate []byte) ([]byte, error) {
	var secret []byte
	err := t.tx.QueryRowContext(ctx, `INSERT INTO test_mode (id, offer_secret) VALUES (1, ?)
ON CONFLICT (id) DO UPDATE SET offer_secret = coalesce(test_mode.offer_secret, excluded.offer_secret)
RETURNING offer_secret`, candidate).Scan(&secret)
	return secret, wrap(err)
}
