package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
)

// payments.Tx.

// nullText maps "" to NULL for optional text columns.
func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (t *tx) InsertCheckoutSession(ctx context.Context, s payments.CheckoutSession) error {
	_, err := t.exec(ctx, `INSERT INTO checkout_sessions
(id, app_id, amount_cents, status, provider, provider_ref, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		s.ID, s.AppID, s.AmountCents, s.Status, s.Provider, s.ProviderRef, s.CreatedAt, s.ExpiresAt)
	return wrap(err, "inserting checkout session")
}

// CheckoutSession with lock reads the row FOR UPDATE: concurrent completions
// of one session queue here, and each sees the previous one's outcome (READ
// COMMITTED returns the latest committed row once the lock is granted).
func (t *tx) CheckoutSession(ctx context.Context, id string, lock bool) (payments.CheckoutSession, bool, error) {
	q := `SELECT app_id, amount_cents, status, provider, provider_ref, created_at, expires_at, completed_at, coalesce(operation_id, '')
FROM checkout_sessions WHERE id = $1`
	if lock {
		q += " FOR UPDATE"
	}
	s := payments.CheckoutSession{ID: id}
	var completed *time.Time
	err := t.queryRow(ctx, q, []any{id}, &s.AppID, &s.AmountCents, &s.Status, &s.Provider, &s.ProviderRef, &s.CreatedAt, &s.ExpiresAt, &completed, &s.OperationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return payments.CheckoutSession{}, false, nil
	}
	if err != nil {
		return payments.CheckoutSession{}, false, wrap(err, "reading checkout session")
	}
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	if completed != nil {
		s.CompletedAt = completed.UTC()
	}
	return s, true, nil
}

func (t *tx) FinishCheckoutSession(ctx context.Context, s payments.CheckoutSession) error {
	n, err := t.exec(ctx, `UPDATE checkout_sessions SET status = $1, completed_at = $2, operation_id = $3
WHERE id = $4 AND status = 'open'`, s.Status, optionalTime(s.CompletedAt), optionalText(s.OperationID), s.ID)
	return paymentRowUpdated(n, err, "checkout session", s.ID)
}

// paymentRowUpdated checks that an UPDATE … WHERE status = <expected> changed its row;
// when it did not, another transaction got there first.
func paymentRowUpdated(n int64, err error, what, id string) error {
	if err != nil {
		return wrap(err, "updating "+what)
	}
	if n != 1 {
		return fmt.Errorf("%w: %s %s was no longer in the expected state", ledger.ErrConflict, what, id)
	}
	return nil
}

func (t *tx) PayoutAccount(ctx context.Context, appID string) (string, error) {
	var acct string
	err := t.queryRow(ctx, `SELECT account_id FROM payout_accounts WHERE app_id = $1`, []any{appID}, &acct)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return acct, wrap(err, "reading payout account")
}

func (t *tx) SetPayoutAccount(ctx context.Context, appID, accountID string, now time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO payout_accounts (app_id, account_id, created_at, updated_at) VALUES ($1, $2, $3, $3)
ON CONFLICT (app_id) DO UPDATE SET account_id = excluded.account_id, updated_at = excluded.updated_at`,
		appID, accountID, now)
	return wrap(err, "setting payout account")
}

func (t *tx) PendingPayout(ctx context.Context, appID string) (bool, error) {
	var pending bool
	err := t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payouts WHERE app_id = $1 AND status = 'pending')`, []any{appID}, &pending)
	return pending, wrap(err, "reading pending payouts")
}

// InsertPayout relies on the partial unique index payouts_one_pending: a
// concurrent insert of another pending payout of the app waits for this one
// to commit, then does nothing.
func (t *tx) InsertPayout(ctx context.Context, p payments.Payout) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO payouts (id, app_id, amount_cents, destination, status, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (app_id) WHERE status = 'pending' DO NOTHING`,
		p.ID, p.AppID, p.AmountCents, p.Destination, p.Status, p.CreatedAt, p.UpdatedAt)
	if err != nil {
		return false, wrap(err, "inserting payout")
	}
	return n == 1, nil
}

func (t *tx) FinishPayout(ctx context.Context, p payments.Payout) error {
	n, err := t.exec(ctx, `UPDATE payouts SET status = $1, transfer_id = $2, operation_id = $3, failure = $4, updated_at = $5
WHERE id = $6 AND status = 'pending'`,
		p.Status, optionalText(p.TransferID), optionalText(p.OperationID), optionalText(p.Failure), p.UpdatedAt, p.ID)
	return paymentRowUpdated(n, err, "payout", p.ID)
}

func (t *tx) LedgerTotals(ctx context.Context, account string) ([]ledger.Total, error) {
	var out []ledger.Total
	err := t.query(ctx, `SELECT type, coalesce(earn_mode, '') AS mode, sum(amount)::bigint, count(*)
FROM ledger_lines WHERE account_id = $1 GROUP BY type, mode ORDER BY type, mode`, []any{account}, func(rows pgx.Rows) error {
		var tot ledger.Total
		var typ, mode string
		if err := rows.Scan(&typ, &mode, &tot.Amount, &tot.Count); err != nil {
			return err
		}
		tot.Type, tot.EarnMode = ledger.LineType(typ), ledger.EarnMode(mode)
		out = append(out, tot)
		return nil
	})
	return out, wrap(err, "reading totals")
}
