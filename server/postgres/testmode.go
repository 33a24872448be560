package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Test mode's one row (server/testmode, migration 00028) on PostgreSQL.
// The upserts lock the row, so instances advancing at once add up.

func (t *tx) TestClockOffset(ctx context.Context) (time.Duration, error) {
	var ns int64
	err := t.queryRow(ctx, `SELECT clock_offset_ns FROM test_mode WHERE id = 1`, nil, &ns)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return time.Duration(ns), wrap(err, "reading the test clock")
}

func (t *tx) AdvanceTestClock(ctx context.Context, d time.Duration) (time.Duration, error) {
	var ns int64
	err := t.queryRow(ctx, `INSERT INTO test_mode (id, clock_offset_ns) VALUES (1, $1)
ON CONFLICT (id) DO UPDATE SET clock_offset_ns = test_mode.clock_offset_ns + excluded.clock_offset_ns
RETURNING clock_offset_ns`, []any{int64(d)}, &ns)
	return time.Duration(ns), wrap(err, "advancing the test clock")
}

func (t *tx) TestOfferSecret(ctx context.Context, candidate []byte) ([]byte, error) {
	var secret []byte
	err := t.queryRow(ctx, `INSERT INTO test_mode (id, offer_secret) VALUES (1, $1)
ON CONFLICT (id) DO UPDATE SET offer_secret = coalesce(test_mode.offer_secret, excluded.offer_secret)
RETURNING offer_secret`, []any{candidate}, &secret)
	return secret, wrap(err, "reading the test offer secret")
}
