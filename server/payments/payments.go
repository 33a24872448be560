// Package payments moves money in and out: top-ups through a payment
// provider's checkout or settled x402 payments (x402topup.go), payouts by
// transfer, and the read side of an app's wallet ledger.
//
// Every money movement commits in the same transaction as the state change
// it belongs to (a checkout session completed, a payout reserved, sent or
// failed), through ledger.Apply, and every ledger key is derived from the
// business event ("topup:<session>", "topup:<x402 settlement>",
// "payout:<payout>"), so nothing is credited or debited twice whatever the
// retries and races. See docs/payments.md.
package payments

import (
	"context"
	"log/slog"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
)

// Limits, in euro cents.
const (
	MinTopUpCents  = xpromo.MinTopUpCents  // EUR 50
	MaxTopUpCents  = 10_000_000            // EUR 100,000: one checkout, not a bank wire
	MinPayoutCents = xpromo.MinPayoutCents // EUR 50 withdrawable
	Currency       = "EUR"
	// CheckoutTTL is how long a checkout session can be paid.
	CheckoutTTL = 24 * time.Hour
	// DefaultPayoutGrace is how long a pending payout is left to the request
	// that started it before the recovery pass resolves it.
	DefaultPayoutGrace = time.Minute
)

// Checkout session statuses.
const (
	CheckoutOpen      = "open"
	CheckoutCompleted = "completed"
	CheckoutExpired   = "expired"
)

// Payout statuses. A payout is pending from its creation (its amount then
// reserved in the ledger) until its transfer is confirmed (sent) or refused
// by the provider (failed, the reservation returned to the wallet).
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
	// Failure says why a session closed unpaid other than by expiring (its
	// delayed payment failed); "" otherwise.
	Failure string
	// PaymentRef is the provider's payment the session was paid by (Stripe:
	// the PaymentIntent, pi_…), stored when it completes: refunds and
	// disputes name it. "" for test mode and for sessions completed before
	// it was stored (ApplyPaymentEvent finds those through the provider).
	PaymentRef string
}

// Payout is one withdrawal of an app's withdrawable balance.
type Payout struct {
	ID          string // "po_…"; also the transfer's idempotency key
	AppID       string
	AmountCents int64
	Destination string // the payout account the transfer goes to
	Status      string // PayoutPending, PayoutSent or PayoutFailed
	TransferID  string // the provider's transfer id, once transferred
	OperationID string // the ledger operation of the reservation (the wallet's payout line)
	Failure     string // why the provider refused it, once failed
	// Ref is the Idempotency-Key of the request that created the payout
	// (zero without one): a retry with that key answers from this payout.
	Ref       idempotency.Ref
	CreatedAt time.Time
	UpdatedAt time.Time // last change; the recovery pass also stamps its claims here
}

// Wire is the payout as the API shows it (the answer of POST
// /v1/apps/{app_id}/payout and the data of payout.sent).
func (p Payout) Wire() xpromo.PayoutResponse {
	return xpromo.PayoutResponse{TransferID: p.TransferID, AmountCents: p.AmountCents, PayoutID: p.ID}
}

// Tx is what the payments domain needs from a transaction.
type Tx interface {
	ListTx
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
	// ClaimOpenCheckoutSessions returns up to limit open sessions of
	// provider created at least age before now and not claimed within age
	// (never, or checked_at at least age before now), least recently
	// claimed first, and stamps their checked_at with now.
	ClaimOpenCheckoutSessions(ctx context.Context, provider string, now time.Time, age time.Duration, limit int) ([]CheckoutSession, error)
	// RecordProviderEvent stores e unless an event with its provider and id
	// is stored; it reports whether it inserted.
	RecordProviderEvent(ctx context.Context, e ProviderEvent) (bool, error)
	// CheckoutSessionByPaymentRef reads the session of provider paid by
	// the payment ref (CheckoutSession.PaymentRef); lock as for
	// CheckoutSession.
	CheckoutSessionByPaymentRef(ctx context.Context, provider, ref string, lock bool) (s CheckoutSession, found bool, err error)
	// SetCheckoutPaymentRef stores the payment of a session that has none
	// yet (one completed before payment refs were stored); a session that
	// has one keeps it.
	SetCheckoutPaymentRef(ctx context.Context, id, ref string) error
	// CheckoutReversals returns the refund and dispute movements of a
	// session, oldest first.
	CheckoutReversals(ctx context.Context, sessionID string) ([]Reversal, error)
	// InsertCheckoutReversal stores a movement; its key is unique (a second
	// insert of a key fails, wrapping ledger.ErrConflict).
	InsertCheckoutReversal(ctx context.Context, r Reversal) error

	// PayoutAccount returns the app's payout account, "" when it has none.
	PayoutAccount(ctx context.Context, appID string) (string, error)
	// SetPayoutAccount creates or replaces the app's payout account.
	SetPayoutAccount(ctx context.Context, appID, accountID string, now time.Time) error
	// PendingPayout reports whether the app has a pending payout.
	PendingPayout(ctx context.Context, appID string) (bool, error)
	// InsertPayout stores a new pending payout. It returns false, writing
	// nothing, when the app already has a pending payout or p.Ref already
	// names a payout (unique indexes guarantee both, whatever the
	// interleaving).
	InsertPayout(ctx context.Context, p Payout) (bool, error)
	// Payout reads a payout; found is false when there is none. With lock,
	// the row stays locked until the end of the transaction.
	Payout(ctx context.Context, id string, lock bool) (p Payout, found bool, err error)
	// PayoutByRef reads the payout created under an Idempotency-Key.
	PayoutByRef(ctx context.Context, ref idempotency.Ref) (p Payout, found bool, err error)
	// FinishPayout stores a pending payout's new status, transfer id and
	// failure. It applies only to a pending payout; otherwise it returns an
	// error wrapping ledger.ErrConflict.
	FinishPayout(ctx context.Context, p Payout) error
	// ClaimStalePayouts returns up to limit pending payouts whose updated_at
	// is at least grace away from now (before it, or after it: stamped by a
	// clock ahead of this one, such as a test clock advanced before a
	// restart), oldest first, and stamps their updated_at with now so that
	// no other recovery pass claims them again within the grace. Rows
	// another transaction holds are skipped (PostgreSQL: FOR UPDATE SKIP
	// LOCKED).
	ClaimStalePayouts(ctx context.Context, now time.Time, grace time.Duration, limit int) ([]Payout, error)

	TestTransferTx
	X402Tx

	// LedgerTotals is ledger.Reader.Totals inside this transaction.
	LedgerTotals(ctx context.Context, account string) ([]ledger.Total, error)

	// Writer appends payout.sent to the outbox.
	outbox.Writer
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
	// CheckoutReconcileAge is how old an open session must be before
	// ReconcileCheckouts asks the provider about it (0:
	// DefaultCheckoutReconcileAge).
	CheckoutReconcileAge time.Duration
	// ConnectReturnURL is where a provider's onboarding sends the person
	// back ("" lets the server answer its base URL); see StartOnboarding.
	ConnectReturnURL string
	// PayoutGrace is how long a pending payout is left to the request that
	// started it before RecoverPayouts resolves it (0: DefaultPayoutGrace).
	PayoutGrace time.Duration
	// Log receives every payout resolution and what an operator must act on
	// (a transfer whose outcome stays unknown).
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

func (s *Service) payoutGrace() time.Duration {
	if s.PayoutGrace <= 0 {
		return DefaultPayoutGrace
	}
	return s.PayoutGrace
}
