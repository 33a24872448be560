// Package payments moves money in and out: top-ups through a payment
// provider's checkout (or, later, x402), payouts by transfer, and the read
// side of an app's wallet ledger.
//
// Every money movement commits in the same transaction as the state change
// it belongs to (a checkout session completed, a payout sent), through
// ledger.Apply, and every ledger key is derived from the business event
// ("topup:<session>", "payout:<payout>"), so nothing is credited or debited
// twice whatever the retries and races. See docs/payments.md.
package payments

import (
	"context"
	"log/slog"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ledger"
)

// Limits, in euro cents.
const (
	MinTopUpCents  = xpromo.MinTopUpCents  // EUR 50
	MaxTopUpCents  = 10_000_000            // EUR 100,000: one checkout, not a bank wire
	MinPayoutCents = xpromo.MinPayoutCents // EUR 50 withdrawable
	Currency       = "EUR"
	// CheckoutTTL is how long a checkout session can be paid.
	CheckoutTTL = 24 * time.Hour
)

// Checkout session statuses.
const (
	CheckoutOpen      = "open"
	CheckoutCompleted = "completed"
	CheckoutExpired   = "expired"
)

// Payout statuses. A payout is pending from its creation until its transfer
// is recorded in the ledger (sent) or refused by the provider (failed).
const (
	PayoutPending = "pending"
	PayoutSent    = "sent"
	PayoutFailed  = "failed"
)

// CheckoutSession is one top-up through a provider's checkout page.
type CheckoutSession struct {
	ID          string // "cs_…"
	AppID       string
	AmountCents int64
	Status      string // CheckoutOpen, CheckoutCompleted or CheckoutExpired
	Provider    string // Provider.Name() of the provider that created it
	ProviderRef string // the provider's own id of the session
	CreatedAt   time.Time
	ExpiresAt   time.Time
	CompletedAt time.Time // zero until completed
	OperationID string    // the ledger operation that credited the wallet; "" until completed
}

// Payout is one withdrawal of an app's withdrawable balance.
type Payout struct {
	ID          string // "po_…"; also the transfer's idempotency key
	AppID       string
	AmountCents int64
	Destination string // the payout account the transfer goes to
	Status      string // PayoutPending, PayoutSent or PayoutFailed
	TransferID  string // the provider's transfer id, once transferred
	OperationID string // the ledger operation of the payout line, once sent
	Failure     string // why it failed (or why a sent transfer is unrecorded)
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Tx is what the payments domain needs from a transaction.
type Tx interface {
	// InsertCheckoutSession stores a new session.
	InsertCheckoutSession(ctx context.Context, s CheckoutSession) error
	// CheckoutSession reads a session; found is false when there is none.
	// With lock, the row stays locked until the end of the transaction
	// (read-write transactions only).
	CheckoutSession(ctx context.Context, id string, lock bool) (s CheckoutSession, found bool, err error)
	// FinishCheckoutSession stores the session's new status, operation id and
	// completion time. It applies only to an open session; when the session
	// is no longer open it returns an error wrapping ledger.ErrConflict, so
	// the transaction is retried and sees the winner.
	FinishCheckoutSession(ctx context.Context, s CheckoutSession) error

	// PayoutAccount returns the app's payout account, "" when it has none.
	PayoutAccount(ctx context.Context, appID string) (string, error)
	// SetPayoutAccount creates or replaces the app's payout account.
	SetPayoutAccount(ctx context.Context, appID, accountID string, now time.Time) error
	// PendingPayout reports whether the app has a pending payout.
	PendingPayout(ctx context.Context, appID string) (bool, error)
	// InsertPayout stores a new pending payout. It returns false, writing
	// nothing, when the app already has a pending payout (a unique index
	// guarantees there is at most one, whatever the interleaving).
	InsertPayout(ctx context.Context, p Payout) (bool, error)
	// FinishPayout stores a pending payout's new status, transfer id,
	// operation id and failure.
	FinishPayout(ctx context.Context, p Payout) error

	// LedgerTotals is ledger.Reader.Totals inside this transaction.
	LedgerTotals(ctx context.Context, account string) ([]ledger.Total, error)
}

// WriteTx is the service's read-write transaction: its own tables, the
// ledger (top-up completion and payouts move money in the same transaction
// as their state change), and the apps' rows an operator's action checks and
// audits.
type WriteTx interface {
	Tx
	ledger.Tx
	GetApp(ctx context.Context, id string, lock bool) (a apps.App, ok bool, err error)
	InsertAdminAudit(ctx context.Context, e apps.AuditEntry) error
}

// Service is the payments domain's entry point; its fields are its
// dependencies (the wire package fills them).
type Service struct {
	// Update runs fn in a read-write transaction, retried on conflicts: fn
	// must have no side effects outside tx.
	Update func(ctx context.Context, fn func(ctx context.Context, tx WriteTx) error) error
	// View runs fn in a read-only snapshot.
	View func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Ledger reads wallet lines outside transactions (the ledger endpoint).
	Ledger ledger.Reader
	// Provider creates checkouts and transfers money out.
	Provider Provider
	// TestMode enables the test checkout page and the implicit test payout
	// accounts. It is off in live mode.
	TestMode bool
	// SuccessURL is where a provider's checkout page sends the payer after
	// paying ("" lets the provider decide).
	SuccessURL string
	// X402 prices top-ups for machine payers.
	X402 X402Config
	// Now is the injected clock.
	Now func() time.Time
	// Log receives what an operator must act on (an unrecorded transfer).
	Log *slog.Logger
}

// now returns the clock's time at the precision both stores keep.
func (s *Service) now() time.Time {
	return s.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}
