package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/idempotency"
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
	q := `SELECT ` + checkoutColumns + ` FROM checkout_sessions WHERE id = $1`
	if lock {
		q += " FOR UPDATE"
	}
	var s payments.CheckoutSession
	var found bool
	err := t.query(ctx, q, []any{id}, func(rows pgx.Rows) error {
		var err error
		s, err = scanCheckoutSession(rows)
		found = true
		return err
	})
	if err != nil {
		return payments.CheckoutSession{}, false, wrap(err, "reading checkout session")
	}
	return s, found, nil
}

const checkoutColumns = `id, app_id, amount_cents, status, provider, provider_ref, created_at, expires_at, completed_at, coalesce(operation_id, ''), coalesce(failure, ''), coalesce(payment_ref, '')`

func scanCheckoutSession(rows pgx.Rows) (payments.CheckoutSession, error) {
	var s payments.CheckoutSession
	var completed *time.Time
	if err := rows.Scan(&s.ID, &s.AppID, &s.AmountCents, &s.Status, &s.Provider, &s.ProviderRef, &s.CreatedAt, &s.ExpiresAt, &completed, &s.OperationID, &s.Failure, &s.PaymentRef); err != nil {
		return s, err
	}
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	if completed != nil {
		s.CompletedAt = completed.UTC()
	}
	return s, nil
}

// ClaimOpenCheckoutSessions claims with FOR UPDATE SKIP LOCKED, so that
// concurrent reconciliation passes claim disjoint batches and skip a
// session a webhook is completing.
func (t *tx) ClaimOpenCheckoutSessions(ctx context.Context, provider string, now time.Time, age time.Duration, limit int) ([]payments.CheckoutSession, error) {
	var out []payments.CheckoutSession
	before := now.Add(-age)
	err := t.query(ctx, `UPDATE checkout_sessions SET checked_at = $1
WHERE id IN (SELECT id FROM checkout_sessions WHERE status = 'open' AND provider = $2 AND created_at <= $3
  AND (checked_at IS NULL OR checked_at <= $3) ORDER BY coalesce(checked_at, created_at), id LIMIT $4 FOR UPDATE SKIP LOCKED)
RETURNING `+checkoutColumns, []any{now, provider, before, limit}, func(rows pgx.Rows) error {
		s, err := scanCheckoutSession(rows)
		out = append(out, s)
		return err
	})
	if err != nil {
		return nil, wrap(err, "claiming open checkout sessions")
	}
	return out, nil
}

func (t *tx) RecordProviderEvent(ctx context.Context, e payments.ProviderEvent) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO provider_events (provider, id, type, object_id, outcome, received_at)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (provider, id) DO NOTHING`, e.Provider, e.ID, e.Type, e.ObjectID, e.Outcome, e.ReceivedAt)
	if err != nil {
		return false, wrap(err, "recording provider event")
	}
	return n == 1, nil
}

func (t *tx) FinishCheckoutSession(ctx context.Context, s payments.CheckoutSession) error {
	n, err := t.exec(ctx, `UPDATE checkout_sessions SET status = $1, completed_at = $2, operation_id = $3, failure = $4,
  payment_ref = coalesce($6, payment_ref)
WHERE id = $5 AND status = 'open'`, s.Status, optionalTime(s.CompletedAt), optionalText(s.OperationID), optionalText(s.Failure), s.ID, optionalText(s.PaymentRef))
	return paymentRowUpdated(n, err, "checkout session", s.ID)
}

// CheckoutSessionByPaymentRef with lock reads the row FOR UPDATE, as
// CheckoutSession: the refund and dispute events of one session queue here.
func (t *tx) CheckoutSessionByPaymentRef(ctx context.Context, provider, ref string, lock bool) (payments.CheckoutSession, bool, error) {
	q := `SELECT ` + checkoutColumns + ` FROM checkout_sessions WHERE provider = $1 AND payment_ref = $2`
	if lock {
		q += " FOR UPDATE"
	}
	var s payments.CheckoutSession
	var found bool
	err := t.query(ctx, q, []any{provider, ref}, func(rows pgx.Rows) error {
		var err error
		s, err = scanCheckoutSession(rows)
		found = true
		return err
	})
	if err != nil {
		return payments.CheckoutSession{}, false, wrap(err, "reading checkout session by payment")
	}
	return s, found, nil
}

func (t *tx) SetCheckoutPaymentRef(ctx context.Context, id, ref string) error {
	_, err := t.exec(ctx, `UPDATE checkout_sessions SET payment_ref = $1 WHERE id = $2 AND payment_ref IS NULL`, ref, id)
	return wrap(err, "storing a checkout session's payment")
}

const reversalColumns = `key, session_id, app_id, kind, charge_id, dispute_id, amount_cents, reported_cents, operation_id, event_id, created_at`

func (t *tx) CheckoutReversals(ctx context.Context, sessionID string) ([]payments.Reversal, error) {
	var out []payments.Reversal
	err := t.query(ctx, `SELECT key, session_id, app_id, kind, charge_id, coalesce(dispute_id, ''), amount_cents, reported_cents,
  coalesce(operation_id, ''), event_id, created_at FROM checkout_reversals WHERE session_id = $1 ORDER BY created_at, key`, []any{sessionID}, func(rows pgx.Rows) error {
		var r payments.Reversal
		err := rows.Scan(&r.Key, &r.SessionID, &r.AppID, &r.Kind, &r.ChargeID, &r.DisputeID, &r.AmountCents, &r.ReportedCents, &r.OperationID, &r.EventID, &r.CreatedAt)
		r.CreatedAt = r.CreatedAt.UTC()
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, wrap(err, "reading checkout reversals")
	}
	return out, nil
}

func (t *tx) InsertCheckoutReversal(ctx context.Context, r payments.Reversal) error {
	_, err := t.exec(ctx, `INSERT INTO checkout_reversals (`+reversalColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.Key, r.SessionID, r.AppID, r.Kind, r.ChargeID, optionalText(r.DisputeID), r.AmountCents, r.ReportedCents, optionalText(r.OperationID), r.EventID, r.CreatedAt)
	return wrap(err, "inserting a checkout reversal")
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

// InsertPayout does nothing on a conflict with either unique index
// (payouts_one_pending: one pending payout per app; payouts_idempotency: one
// payout per Idempotency-Key): a concurrent insert waits for the other
// transaction to commit, then does nothing.
func (t *tx) InsertPayout(ctx context.Context, p payments.Payout) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO payouts
(id, app_id, amount_cents, destination, status, operation_id, idempotency_scope, idempotency_key, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT DO NOTHING`,
		p.ID, p.AppID, p.AmountCents, p.Destination, p.Status, optionalText(p.OperationID),
		optionalText(p.Ref.Scope), optionalText(p.Ref.Key), p.CreatedAt, p.UpdatedAt)
	if err != nil {
		return false, wrap(err, "inserting payout")
	}
	return n == 1, nil
}

const payoutColumns = `id, app_id, amount_cents, destination, status, coalesce(transfer_id, ''), coalesce(operation_id, ''),
coalesce(failure, ''), coalesce(idempotency_scope, ''), coalesce(idempotency_key, ''), created_at, updated_at`

func scanPayout(row pgx.Row) (payments.Payout, error) {
	var p payments.Payout
	err := row.Scan(&p.ID, &p.AppID, &p.AmountCents, &p.Destination, &p.Status, &p.TransferID, &p.OperationID,
		&p.Failure, &p.Ref.Scope, &p.Ref.Key, &p.CreatedAt, &p.UpdatedAt)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p, err
}

func (t *tx) onePayout(ctx context.Context, q string, args ...any) (payments.Payout, bool, error) {
	var p payments.Payout
	b := &pgx.Batch{}
	b.Queue(q, args...).QueryRow(func(row pgx.Row) error {
		var err error
		p, err = scanPayout(row)
		return err
	})
	err := t.send(ctx, b)
	if errors.Is(err, pgx.ErrNoRows) {
		t.err = nil // not a failure of the transaction
		return payments.Payout{}, false, nil
	}
	if err != nil {
		return payments.Payout{}, false, wrap(err, "reading payout")
	}
	return p, true, nil
}

// Payout with lock reads the row FOR UPDATE: concurrent finishes of one
// payout queue here, and each sees the previous one's outcome.
func (t *tx) Payout(ctx context.Context, id string, lock bool) (payments.Payout, bool, error) {
	q := `SELECT ` + payoutColumns + ` FROM payouts WHERE id = $1`
	if lock {
		q += " FOR UPDATE"
	}
	return t.onePayout(ctx, q, id)
}

func (t *tx) PayoutByRef(ctx context.Context, ref idempotency.Ref) (payments.Payout, bool, error) {
	return t.onePayout(ctx, `SELECT `+payoutColumns+` FROM payouts WHERE idempotency_scope = $1 AND idempotency_key = $2`, ref.Scope, ref.Key)
}

func (t *tx) FinishPayout(ctx context.Context, p payments.Payout) error {
	n, err := t.exec(ctx, `UPDATE payouts SET status = $1, transfer_id = $2, failure = $3, updated_at = $4
WHERE id = $5 AND status = 'pending'`,
		p.Status, optionalText(p.TransferID), optionalText(p.Failure), p.UpdatedAt, p.ID)
	return paymentRowUpdated(n, err, "payout", p.ID)
}

func (t *tx) ClaimStalePayouts(ctx context.Context, now time.Time, grace time.Duration, limit int) ([]payments.Payout, error) {
	out, err := claimStale(ctx, t, "payouts", payoutColumns, scanPayout, now, grace, limit)
	slices.SortFunc(out, func(a, b payments.Payout) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, wrap(err, "claiming stale payouts")
}

// claimStale claims up to limit pending rows of table (payouts, x402
// settlements) whose updated_at is older than grace, or in the future by
// more than grace (a clock that jumped back), by touching their updated_at.
// FOR UPDATE SKIP LOCKED: rows another recovery pass (or a row finishing)
// holds are skipped, so concurrent passes claim disjoint batches. READ
// COMMITTED re-checks each locked row on its newest version, so a claimed
// row is still pending.
func claimStale[T any](ctx context.Context, t *tx, table, columns string, scan func(pgx.Row) (T, error), now time.Time, grace time.Duration, limit int) ([]T, error) {
	var out []T
	err := t.query(ctx, `UPDATE `+table+` SET updated_at = $1
WHERE id IN (SELECT id FROM `+table+` WHERE status = 'pending' AND (updated_at <= $2 OR updated_at >= $3)
  ORDER BY updated_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
RETURNING `+columns, []any{now, now.Add(-grace), now.Add(grace), limit}, func(rows pgx.Rows) error {
		v, err := scan(rows)
		out = append(out, v)
		return err
	})
	return out, err
}

func (t *tx) InsertTestTransfer(ctx context.Context, tr payments.TestTransfer) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO test_transfers
(idempotency_key, transfer_id, payout_id, app_id, destination, amount_cents, currency, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (idempotency_key) DO NOTHING`,
		tr.Key, tr.TransferID, tr.PayoutID, tr.AppID, tr.Destination, tr.AmountCents, tr.Currency, tr.CreatedAt)
	if err != nil {
		return false, wrap(err, "inserting test transfer")
	}
	return n == 1, nil
}

func (t *tx) TestTransfer(ctx context.Context, key string) (payments.TestTransfer, bool, error) {
	tr := payments.TestTransfer{Key: key}
	err := t.queryRow(ctx, `SELECT transfer_id, payout_id, app_id, destination, amount_cents, currency, created_at
FROM test_transfers WHERE idempotency_key = $1`, []any{key},
		&tr.TransferID, &tr.PayoutID, &tr.AppID, &tr.Destination, &tr.AmountCents, &tr.Currency, &tr.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return payments.TestTransfer{}, false, nil
	}
	if err != nil {
		return payments.TestTransfer{}, false, wrap(err, "reading test transfer")
	}
	tr.CreatedAt = tr.CreatedAt.UTC()
	return tr, true, nil
}

func (t *tx) LedgerTotals(ctx context.Context, account string) ([]ledger.Total, error) {
	if err := walletOnly(account); err != nil {
		return nil, err
	}
	var out []ledger.Total
	err := t.query(ctx, selectWalletTotals, []any{account}, func(rows pgx.Rows) error {
		tot, err := scanTotal(rows)
		out = append(out, tot)
		return err
	})
	return out, wrap(err, "reading totals")
}
