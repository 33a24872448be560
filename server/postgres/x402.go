package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/payments"
)

// payments.X402Tx.

const x402Columns = `id, app_id, network, asset, payer, nonce, value, amount_cents, valid_before, payment, requirements, status, tx_hash, operation_id, failure, created_at, updated_at`

func scanX402(row pgx.Row) (payments.X402Settlement, error) {
	var x payments.X402Settlement
	err := row.Scan(&x.ID, &x.AppID, &x.Network, &x.Asset, &x.Payer, &x.Nonce, &x.Value, &x.AmountCents, &x.ValidBefore, &x.Payment, &x.Requirements,
		&x.Status, &x.TxHash, &x.OperationID, &x.Failure, &x.CreatedAt, &x.UpdatedAt)
	x.ValidBefore, x.CreatedAt, x.UpdatedAt = x.ValidBefore.UTC(), x.CreatedAt.UTC(), x.UpdatedAt.UTC()
	return x, err
}

// InsertX402Settlement: a concurrent insert of the same authorization waits
// for the first to commit, then inserts nothing (ON CONFLICT DO NOTHING).
func (t *tx) InsertX402Settlement(ctx context.Context, x payments.X402Settlement) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO x402_settlements (`+x402Columns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT DO NOTHING`,
		x.ID, x.AppID, x.Network, x.Asset, x.Payer, x.Nonce, x.Value, x.AmountCents, x.ValidBefore, x.Payment, x.Requirements,
		x.Status, x.TxHash, x.OperationID, x.Failure, x.CreatedAt, x.UpdatedAt)
	if err != nil {
		return false, wrap(err, "inserting x402 settlement")
	}
	return n == 1, nil
}

func (t *tx) X402Settlement(ctx context.Context, network, asset, payer, nonce string, lock bool) (payments.X402Settlement, bool, error) {
	q := `SELECT ` + x402Columns + ` FROM x402_settlements WHERE network = $1 AND asset = $2 AND payer = $3 AND nonce = $4`
	if lock {
		q += " FOR UPDATE"
	}
	var x payments.X402Settlement
	b := &pgx.Batch{}
	b.Queue(q, network, asset, payer, nonce).QueryRow(func(row pgx.Row) error {
		var err error
		x, err = scanX402(row)
		return err
	})
	err := t.send(ctx, b)
	if errors.Is(err, pgx.ErrNoRows) {
		t.err = nil // not a failure of the transaction
		return payments.X402Settlement{}, false, nil
	}
	if err != nil {
		return payments.X402Settlement{}, false, wrap(err, "reading x402 settlement")
	}
	return x, true, nil
}

func (t *tx) RetryX402Settlement(ctx context.Context, x payments.X402Settlement) error {
	n, err := t.exec(ctx, `UPDATE x402_settlements SET app_id = $1, value = $2, amount_cents = $3, valid_before = $4, payment = $5, requirements = $6,
status = 'pending', tx_hash = '', failure = '', updated_at = $7 WHERE id = $8 AND status = 'failed'`,
		x.AppID, x.Value, x.AmountCents, x.ValidBefore, x.Payment, x.Requirements, x.UpdatedAt, x.ID)
	return paymentRowUpdated(n, err, "x402 settlement", x.ID)
}

func (t *tx) FinishX402Settlement(ctx context.Context, x payments.X402Settlement) error {
	n, err := t.exec(ctx, `UPDATE x402_settlements SET status = $1, tx_hash = $2, operation_id = $3, failure = $4, updated_at = $5
WHERE id = $6 AND status = 'pending'`, x.Status, x.TxHash, x.OperationID, x.Failure, x.UpdatedAt, x.ID)
	return paymentRowUpdated(n, err, "x402 settlement", x.ID)
}

// ClaimStaleX402Settlements claims as ClaimStalePayouts does.
func (t *tx) ClaimStaleX402Settlements(ctx context.Context, now time.Time, grace time.Duration, limit int) ([]payments.X402Settlement, error) {
	out, err := claimStale(ctx, t, "x402_settlements", x402Columns, scanX402, now, grace, limit)
	slices.SortFunc(out, func(a, b payments.X402Settlement) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, wrap(err, "claiming stale x402 settlements")
}

func (t *tx) InsertX402Quote(ctx context.Context, q payments.X402Quote) error {
	_, err := t.exec(ctx, `INSERT INTO x402_quotes (id, app_id, amount_cents, value, rate, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, q.ID, q.AppID, q.AmountCents, q.Value, q.Rate, q.CreatedAt, q.ExpiresAt)
	return wrap(err, "inserting x402 quote")
}

func (t *tx) X402QuoteFor(ctx context.Context, appID string, amountCents int64, value string, now time.Time) (bool, error) {
	var found bool
	err := t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM x402_quotes WHERE app_id = $1 AND amount_cents = $2 AND value = $3 AND expires_at >= $4)`,
		[]any{appID, amountCents, value, now}, &found)
	return found, wrap(err, "reading x402 quotes")
}
