package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
)

// payments.Tx. SQLite has one writer (every write transaction began
// IMMEDIATE), so a read inside a write transaction is already as good as
// locked.

func (t *tx) InsertCheckoutSession(ctx context.Context, s payments.CheckoutSession) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO checkout_sessions
(id, app_id, amount_cents, status, provider, provider_ref, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.AppID, s.AmountCents, s.Status, s.Provider, s.ProviderRef, micros(s.CreatedAt), micros(s.ExpiresAt))
	return wrap(err)
}

func (t *tx) CheckoutSession(ctx context.Context, id string, lock bool) (payments.CheckoutSession, bool, error) {
	s := payments.CheckoutSession{ID: id}
	var created, expires int64
	var completed sql.NullInt64
	var opID sql.NullString
	err := t.tx.QueryRowContext(ctx, `SELECT app_id, amount_cents, status, provider, provider_ref, created_at, expires_at, completed_at, operation_id
FROM checkout_sessions WHERE id = ?`, id).Scan(&s.AppID, &s.AmountCents, &s.Status, &s.Provider, &s.ProviderRef, &created, &expires, &completed, &opID)
	if errors.Is(err, sql.ErrNoRows) {
		return payments.CheckoutSession{}, false, nil
	}
	if err != nil {
		return payments.CheckoutSession{}, false, wrap(err)
	}
	s.CreatedAt, s.ExpiresAt, s.OperationID = fromMicros(created), fromMicros(expires), opID.String
	if completed.Valid {
		s.CompletedAt = fromMicros(completed.Int64)
	}
	return s, true, nil
}

func (t *tx) FinishCheckoutSession(ctx context.Context, s payments.CheckoutSession) error {
	var completed any
	if !s.CompletedAt.IsZero() {
		completed = micros(s.CompletedAt)
	}
	res, err := t.tx.ExecContext(ctx, `UPDATE checkout_sessions SET status = ?, completed_at = ?, operation_id = ?
WHERE id = ? AND status = 'open'`, s.Status, completed, null(s.OperationID), s.ID)
	return paymentRowUpdated(res, err, "checkout session", s.ID)
}

// paymentRowUpdated checks that an UPDATE … WHERE status = <expected> changed its row;
// when it did not, another transaction got there first.
func paymentRowUpdated(res sql.Result, err error, what, id string) error {
	if err != nil {
		return wrap(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return wrap(err)
	} else if n != 1 {
		return fmt.Errorf("%w: %s %s was no longer in the expected state", ledger.ErrConflict, what, id)
	}
	return nil
}

func (t *tx) PayoutAccount(ctx context.Context, appID string) (string, error) {
	var acct string
	err := t.tx.QueryRowContext(ctx, `SELECT account_id FROM payout_accounts WHERE app_id = ?`, appID).Scan(&acct)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return acct, wrap(err)
}

func (t *tx) SetPayoutAccount(ctx context.Context, appID, accountID string, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO payout_accounts (app_id, account_id, created_at, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (app_id) DO UPDATE SET account_id = excluded.account_id, updated_at = excluded.updated_at`,
		appID, accountID, micros(now), micros(now))
	return wrap(err)
}

func (t *tx) PendingPayout(ctx context.Context, appID string) (bool, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM payouts WHERE app_id = ? AND status = 'pending'`, appID).Scan(&n)
	return n > 0, wrap(err)
}

func (t *tx) InsertPayout(ctx context.Context, p payments.Payout) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO payouts (id, app_id, amount_cents, destination, status, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (app_id) WHERE status = 'pending' DO NOTHING`,
		p.ID, p.AppID, p.AmountCents, p.Destination, p.Status, micros(p.CreatedAt), micros(p.UpdatedAt))
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) FinishPayout(ctx context.Context, p payments.Payout) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE payouts SET status = ?, transfer_id = ?, operation_id = ?, failure = ?, updated_at = ?
WHERE id = ? AND status = 'pending'`,
		p.Status, null(p.TransferID), null(p.OperationID), null(p.Failure), micros(p.UpdatedAt), p.ID)
	return paymentRowUpdated(res, err, "payout", p.ID)
}

func (t *tx) LedgerTotals(ctx context.Context, account string) ([]ledger.Total, error) {
	return reader{t.tx}.Totals(ctx, account)
}
