package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
)

// payments.Tx. SQLite has one writer (every write transaction began
// IMMEDIATE), so a read inside a write transaction is already as good as
// locked, and a claim never races another.

func (t *tx) InsertCheckoutSession(ctx context.Context, s payments.CheckoutSession) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO checkout_sessions
(id, app_id, amount_cents, status, provider, provider_ref, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.AppID, s.AmountCents, s.Status, s.Provider, s.ProviderRef, micros(s.CreatedAt), micros(s.ExpiresAt))
	return wrap(err)
}

func (t *tx) CheckoutSession(ctx context.Context, id string, lock bool) (payments.CheckoutSession, bool, error) {
	s, err := scanCheckoutSession(t.tx.QueryRowContext(ctx, `SELECT `+checkoutColumns+` FROM checkout_sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return payments.CheckoutSession{}, false, nil
	}
	if err != nil {
		return payments.CheckoutSession{}, false, wrap(err)
	}
	return s, true, nil
}

const checkoutColumns = `id, app_id, amount_cents, status, provider, provider_ref, created_at, expires_at, completed_at, operation_id, failure, payment_ref`

func scanCheckoutSession(sc scanner) (payments.CheckoutSession, error) {
	var s payments.CheckoutSession
	var created, expires int64
	var completed sql.NullInt64
	var opID, failure, paymentRef sql.NullString
	if err := sc.Scan(&s.ID, &s.AppID, &s.AmountCents, &s.Status, &s.Provider, &s.ProviderRef, &created, &expires, &completed, &opID, &failure, &paymentRef); err != nil {
		return s, err
	}
	s.CreatedAt, s.ExpiresAt, s.OperationID, s.Failure, s.PaymentRef = fromMicros(created), fromMicros(expires), opID.String, failure.String, paymentRef.String
	if completed.Valid {
		s.CompletedAt = fromMicros(completed.Int64)
	}
	return s, nil
}

func (t *tx) ClaimOpenCheckoutSessions(ctx context.Context, provider string, now time.Time, age time.Duration, limit int) ([]payments.CheckoutSession, error) {
	before := micros(now.Add(-age))
	rows, err := t.tx.QueryContext(ctx, `UPDATE checkout_sessions SET checked_at = ?
WHERE id IN (SELECT id FROM checkout_sessions WHERE status = 'open' AND provider = ? AND created_at <= ?
  AND (checked_at IS NULL OR checked_at <= ?) ORDER BY coalesce(checked_at, created_at), id LIMIT ?)
RETURNING `+checkoutColumns, micros(now), provider, before, before, limit)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []payments.CheckoutSession
	for rows.Next() {
		s, err := scanCheckoutSession(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, s)
	}
	return out, wrap(rows.Err())
}

func (t *tx) RecordProviderEvent(ctx context.Context, e payments.ProviderEvent) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO provider_events (provider, id, type, object_id, outcome, received_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (provider, id) DO NOTHING`, e.Provider, e.ID, e.Type, e.ObjectID, e.Outcome, micros(e.ReceivedAt))
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) FinishCheckoutSession(ctx context.Context, s payments.CheckoutSession) error {
	var completed any
	if !s.CompletedAt.IsZero() {
		completed = micros(s.CompletedAt)
	}
	res, err := t.tx.ExecContext(ctx, `UPDATE checkout_sessions SET status = ?, completed_at = ?, operation_id = ?, failure = ?,
  payment_ref = coalesce(?, payment_ref)
WHERE id = ? AND status = 'open'`, s.Status, completed, null(s.OperationID), null(s.Failure), null(s.PaymentRef), s.ID)
	return paymentRowUpdated(res, err, "checkout session", s.ID)
}

func (t *tx) CheckoutSessionByPaymentRef(ctx context.Context, provider, ref string, lock bool) (payments.CheckoutSession, bool, error) {
	s, err := scanCheckoutSession(t.tx.QueryRowContext(ctx, `SELECT `+checkoutColumns+` FROM checkout_sessions WHERE provider = ? AND payment_ref = ?`, provider, ref))
	if errors.Is(err, sql.ErrNoRows) {
		return payments.CheckoutSession{}, false, nil
	}
	if err != nil {
		return payments.CheckoutSession{}, false, wrap(err)
	}
	return s, true, nil
}

func (t *tx) SetCheckoutPaymentRef(ctx context.Context, id, ref string) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE checkout_sessions SET payment_ref = ? WHERE id = ? AND payment_ref IS NULL`, ref, id)
	return wrap(err)
}

const reversalColumns = `key, session_id, app_id, kind, charge_id, dispute_id, amount_cents, reported_cents, operation_id, event_id, created_at`

func (t *tx) CheckoutReversals(ctx context.Context, sessionID string) ([]payments.Reversal, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+reversalColumns+` FROM checkout_reversals WHERE session_id = ? ORDER BY created_at, key`, sessionID)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []payments.Reversal
	for rows.Next() {
		var r payments.Reversal
		var dispute, opID sql.NullString
		var created int64
		if err := rows.Scan(&r.Key, &r.SessionID, &r.AppID, &r.Kind, &r.ChargeID, &dispute, &r.AmountCents, &r.ReportedCents, &opID, &r.EventID, &created); err != nil {
			return nil, wrap(err)
		}
		r.DisputeID, r.OperationID, r.CreatedAt = dispute.String, opID.String, fromMicros(created)
		out = append(out, r)
	}
	return out, wrap(rows.Err())
}

func (t *tx) InsertCheckoutReversal(ctx context.Context, r payments.Reversal) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO checkout_reversals (`+reversalColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Key, r.SessionID, r.AppID, r.Kind, r.ChargeID, null(r.DisputeID), r.AmountCents, r.ReportedCents, null(r.OperationID), r.EventID, micros(r.CreatedAt))
	return wrap(err)
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

// InsertPayout does nothing on a conflict with either unique index: one
// pending payout per app, one payout per idempotency key.
func (t *tx) InsertPayout(ctx context.Context, p payments.Payout) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO payouts
(id, app_id, amount_cents, destination, status, operation_id, idempotency_scope, idempotency_key, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		p.ID, p.AppID, p.AmountCents, p.Destination, p.Status, null(p.OperationID), null(p.Ref.Scope), null(p.Ref.Key), micros(p.CreatedAt), micros(p.UpdatedAt))
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

const payoutColumns = `id, app_id, amount_cents, destination, status, transfer_id, operation_id, failure, idempotency_scope, idempotency_key, created_at, updated_at`

func scanPayout(s scanner) (payments.Payout, error) {
	var p payments.Payout
	var transfer, op, failure, scope, key sql.NullString
	var created, updated int64
	err := s.Scan(&p.ID, &p.AppID, &p.AmountCents, &p.Destination, &p.Status, &transfer, &op, &failure, &scope, &key, &created, &updated)
	p.TransferID, p.OperationID, p.Failure = transfer.String, op.String, failure.String
	p.Ref.Scope, p.Ref.Key = scope.String, key.String
	p.CreatedAt, p.UpdatedAt = fromMicros(created), fromMicros(updated)
	return p, err
}

func (t *tx) onePayout(ctx context.Context, where string, args ...any) (payments.Payout, bool, error) {
	p, err := scanPayout(t.tx.QueryRowContext(ctx, `SELECT `+payoutColumns+` FROM payouts WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return payments.Payout{}, false, nil
	}
	if err != nil {
		return payments.Payout{}, false, wrap(err)
	}
	return p, true, nil
}

func (t *tx) Payout(ctx context.Context, id string, lock bool) (payments.Payout, bool, error) {
	return t.onePayout(ctx, `id = ?`, id)
}

func (t *tx) PayoutByRef(ctx context.Context, ref idempotency.Ref) (payments.Payout, bool, error) {
	return t.onePayout(ctx, `idempotency_scope = ? AND idempotency_key = ?`, ref.Scope, ref.Key)
}

func (t *tx) FinishPayout(ctx context.Context, p payments.Payout) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE payouts SET status = ?, transfer_id = ?, failure = ?, updated_at = ?
WHERE id = ? AND status = 'pending'`,
		p.Status, null(p.TransferID), null(p.Failure), micros(p.UpdatedAt), p.ID)
	return paymentRowUpdated(res, err, "payout", p.ID)
}

func (t *tx) ClaimStalePayouts(ctx context.Context, now time.Time, grace time.Duration, limit int) ([]payments.Payout, error) {
	out, err := claimStale(ctx, t, "payouts", payoutColumns, scanPayout, now, grace, limit)
	slices.SortFunc(out, func(a, b payments.Payout) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

// claimStale claims up to limit pending rows of table (payouts, x402
// settlements) whose updated_at is older than grace, or in the future by
// more than grace (a clock that jumped back), by touching their updated_at.
// SQLite's single writer makes concurrent passes take turns.
func claimStale[T any](ctx context.Context, t *tx, table, columns string, scan func(scanner) (T, error), now time.Time, grace time.Duration, limit int) ([]T, error) {
	rows, err := t.tx.QueryContext(ctx, `UPDATE `+table+` SET updated_at = ?
WHERE id IN (SELECT id FROM `+table+` WHERE status = 'pending' AND (updated_at <= ? OR updated_at >= ?) ORDER BY updated_at, id LIMIT ?)
RETURNING `+columns, micros(now), micros(now.Add(-grace)), micros(now.Add(grace)), limit)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, v)
	}
	return out, wrap(rows.Err())
}

func (t *tx) InsertTestTransfer(ctx context.Context, tr payments.TestTransfer) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO test_transfers
(idempotency_key, transfer_id, payout_id, app_id, destination, amount_cents, currency, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`,
		tr.Key, tr.TransferID, tr.PayoutID, tr.AppID, tr.Destination, tr.AmountCents, tr.Currency, micros(tr.CreatedAt))
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

func (t *tx) TestTransfer(ctx context.Context, key string) (payments.TestTransfer, bool, error) {
	tr := payments.TestTransfer{Key: key}
	var created int64
	err := t.tx.QueryRowContext(ctx, `SELECT transfer_id, payout_id, app_id, destination, amount_cents, currency, created_at
FROM test_transfers WHERE idempotency_key = ?`, key).Scan(&tr.TransferID, &tr.PayoutID, &tr.AppID, &tr.Destination, &tr.AmountCents, &tr.Currency, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return payments.TestTransfer{}, false, nil
	}
	if err != nil {
		return payments.TestTransfer{}, false, wrap(err)
	}
	tr.CreatedAt = fromMicros(created)
	return tr, true, nil
}

func (t *tx) LedgerTotals(ctx context.Context, account string) ([]ledger.Total, error) {
	return reader{t.tx}.Totals(ctx, account)
}
