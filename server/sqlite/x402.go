package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/xpromo/xpromo/server/payments"
)

// payments.X402Tx (see the comment of payments.Tx's methods in payments.go:
// SQLite has one writer, so reads in a write transaction are as good as
// locked).

const x402Columns = `id, app_id, network, asset, payer, nonce, value, amount_cents, valid_before, payment, requirements, status, tx_hash, operation_id, failure, created_at, updated_at`

func scanX402(s scanner) (payments.X402Settlement, error) {
	var x payments.X402Settlement
	var before, created, updated int64
	err := s.Scan(&x.ID, &x.AppID, &x.Network, &x.Asset, &x.Payer, &x.Nonce, &x.Value, &x.AmountCents, &before, &x.Payment, &x.Requirements,
		&x.Status, &x.TxHash, &x.OperationID, &x.Failure, &created, &updated)
	x.ValidBefore, x.CreatedAt, x.UpdatedAt = fromMicros(before), fromMicros(created), fromMicros(updated)
	return x, err
}

func (t *tx) InsertX402Settlement(ctx context.Context, x payments.X402Settlement) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO x402_settlements (`+x402Columns+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		x.ID, x.AppID, x.Network, x.Asset, x.Payer, x.Nonce, x.Value, x.AmountCents, micros(x.ValidBefore), x.Payment, x.Requirements,
		x.Status, x.TxHash, x.OperationID, x.Failure, micros(x.CreatedAt), micros(x.UpdatedAt))
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) X402Settlement(ctx context.Context, network, asset, payer, nonce string, lock bool) (payments.X402Settlement, bool, error) {
	x, err := scanX402(t.tx.QueryRowContext(ctx, `SELECT `+x402Columns+` FROM x402_settlements
WHERE network = ? AND asset = ? AND payer = ? AND nonce = ?`, network, asset, payer, nonce))
	if errors.Is(err, sql.ErrNoRows) {
		return payments.X402Settlement{}, false, nil
	}
	if err != nil {
		return payments.X402Settlement{}, false, wrap(err)
	}
	return x, true, nil
}

func (t *tx) RetryX402Settlement(ctx context.Context, x payments.X402Settlement) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE x402_settlements SET app_id = ?, value = ?, amount_cents = ?, valid_before = ?, payment = ?, requirements = ?,
status = 'pending', tx_hash = '', failure = '', updated_at = ? WHERE id = ? AND status = 'failed'`,
		x.AppID, x.Value, x.AmountCents, micros(x.ValidBefore), x.Payment, x.Requirements, micros(x.UpdatedAt), x.ID)
	return paymentRowUpdated(res, err, "x402 settlement", x.ID)
}

func (t *tx) FinishX402Settlement(ctx context.Context, x payments.X402Settlement) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE x402_settlements SET status = ?, tx_hash = ?, operation_id = ?, failure = ?, updated_at = ?
WHERE id = ? AND status = 'pending'`, x.Status, x.TxHash, x.OperationID, x.Failure, micros(x.UpdatedAt), x.ID)
	return paymentRowUpdated(res, err, "x402 settlement", x.ID)
}

// ClaimStaleX402Settlements claims as ClaimStalePayouts does.
func (t *tx) ClaimStaleX402Settlements(ctx context.Context, now time.Time, grace time.Duration, limit int) ([]payments.X402Settlement, error) {
	out, err := claimStale(ctx, t, "x402_settlements", x402Columns, scanX402, now, grace, limit)
	slices.SortFunc(out, func(a, b payments.X402Settlement) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

func (t *tx) InsertX402Quote(ctx context.Context, q payments.X402Quote) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO x402_quotes (id, app_id, amount_cents, value, rate, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`, q.ID, q.AppID, q.AmountCents, q.Value, q.Rate, micros(q.CreatedAt), micros(q.ExpiresAt))
	return wrap(err)
}

func (t *tx) X402QuoteFor(ctx context.Context, appID string, amountCents int64, value string, now time.Time) (bool, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM x402_quotes WHERE app_id = ? AND amount_cents = ? AND value = ? AND expires_at >= ?`,
		appID, amountCents, value, micros(now)).Scan(&n)
	return n > 0, wrap(err)
}
