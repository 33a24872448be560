package payments

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/txunit"
)

// What a provider says about one of its checkout sessions (CheckoutState.Outcome).
const (
	// OutcomePaid: the payment succeeded (Stripe: checkout.session.completed
	// with payment_status paid, or checkout.session.async_payment_succeeded).
	OutcomePaid = "paid"
	// OutcomeOpen: not paid yet (still open, or completed with a delayed
	// payment method whose money has not arrived).
	OutcomeOpen = "open"
	// OutcomeExpired: the session expired unpaid.
	OutcomeExpired = "expired"
	// OutcomeFailed: the delayed payment failed; the session is over unpaid.
	OutcomeFailed = "failed"
)

// CheckoutState is a provider's account of one checkout session, from its
// webhook or from asking it (CheckoutLookup).
type CheckoutState struct {
	ProviderRef string // the provider's id of the session (Stripe: cs_…)
	SessionID   string // the server's id it was opened for (Stripe: client_reference_id)
	Outcome     string // OutcomePaid, OutcomeOpen, OutcomeExpired or OutcomeFailed
	AmountCents int64  // what the payer paid (Stripe: amount_total)
	Currency    string // ISO 4217, any case
	// PaymentRef is the provider's payment (Stripe: the session's
	// PaymentIntent), stored on the session when it completes.
	PaymentRef string
}

// CheckoutLookup is a provider whose sessions are paid outside the server
// (Stripe): the reconciliation pass asks it about sessions whose webhook
// never came.
type CheckoutLookup interface {
	LookupCheckout(ctx context.Context, providerRef string) (CheckoutState, error)
}

// ProviderEvent is a provider's notification, recorded once by its id
// (table provider_events) in the transaction of its effect, so a
// redelivered event has none.
type ProviderEvent struct {
	Provider   string
	ID         string // Stripe: evt_…
	Type       string // Stripe: checkout.session.completed, …
	ObjectID   string // the session the event is about
	Outcome    string // what the server did with it, for operators
	ReceivedAt time.Time
}

// Errors of ApplyCheckout a webhook receiver tells apart: it acknowledges
// them (redelivering would not change them) and logs them.
var (
	// ErrUnknownSession: the event names no session of this server (another
	// integration on the same provider account).
	ErrUnknownSession = errors.New("payments: no checkout session of this server")
	// ErrCheckoutMismatch: the provider's session disagrees with the stored
	// one (another provider reference, amount or currency): nothing is
	// credited.
	ErrCheckoutMismatch = errors.New("payments: the provider's checkout session disagrees with the stored one")
)

// ApplyCheckout records what the provider says about a session, in one
// transaction with its effect: paid credits the wallet (ledger key
// "topup:<session id>", as the test checkout page) and completes the
// session; expired and failed close it unpaid (failed with its reason);
// open changes nothing. A session already completed or closed is returned
// unchanged, so however many webhooks and reconciliation passes race for one
// session, the wallet is credited once. The amount and currency must equal
// the session's (ErrCheckoutMismatch otherwise: nothing is credited, and the
// session stays open for an operator to look at).
//
// ev, when its ID is set, is recorded in the same transaction; an event
// already recorded changes nothing and reports duplicate.
func (s *Service) ApplyCheckout(ctx context.Context, st CheckoutState, ev ProviderEvent) (sess CheckoutSession, duplicate bool, err error) {
	ctx = txunit.Detached(ctx)
	var refused error
	err = s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		sess, duplicate, refused = CheckoutSession{}, false, nil
		now := s.now()
		var err error
		sess, err = s.applyCheckout(ctx, tx, st, now)
		if errors.Is(err, ErrUnknownSession) || errors.Is(err, ErrCheckoutMismatch) {
			// Refused before anything was written: the event is still
			// recorded (below), so its redelivery is recognised.
			refused, err = err, nil
		}
		if err != nil || ev.ID == "" {
			return err
		}
		if ev.Outcome == "" {
			ev.Outcome = st.Outcome
		}
		return s.recordEvent(ctx, tx, ev, st.ProviderRef, refused, now)
	})
	switch {
	case errors.Is(err, errDuplicateEvent):
		return CheckoutSession{}, true, nil
	case err != nil:
		return CheckoutSession{}, false, err
	}
	return sess, false, refused
}

var errDuplicateEvent = errors.New("payments: provider event already recorded")

// recordEvent records provider event ev about objectID in the transaction of
// its effect (its outcome "refused: …" when refused), or answers
// errDuplicateEvent when it was recorded before: its effect, if it had one,
// committed with it, so the caller's transaction is rolled back.
func (s *Service) recordEvent(ctx context.Context, tx WriteTx, ev ProviderEvent, objectID string, refused error, now time.Time) error {
	ev.Provider, ev.ObjectID, ev.ReceivedAt = s.Provider.Name(), objectID, now
	if refused != nil {
		ev.Outcome = failureNote(fmt.Errorf("refused: %w", refused))
	}
	inserted, err := tx.RecordProviderEvent(ctx, ev)
	if err == nil && !inserted {
		err = errDuplicateEvent
	}
	return err
}

// applyCheckout is ApplyCheckout inside its transaction.
func (s *Service) applyCheckout(ctx context.Context, tx WriteTx, st CheckoutState, now time.Time) (CheckoutSession, error) {
	sess, found, err := tx.CheckoutSession(ctx, st.SessionID, true)
	if err != nil {
		return CheckoutSession{}, err
	}
	if !found || sess.Provider != s.Provider.Name() {
		return CheckoutSession{}, fmt.Errorf("%w: %q (provider session %s)", ErrUnknownSession, st.SessionID, st.ProviderRef)
	}
	if sess.ProviderRef != st.ProviderRef {
		return sess, fmt.Errorf("%w: session %s was opened as %s, the event is about %s", ErrCheckoutMismatch, sess.ID, sess.ProviderRef, st.ProviderRef)
	}
	if sess.Status != CheckoutOpen {
		return sess, nil // completed or closed already: the same answer again
	}
	switch st.Outcome {
	case OutcomePaid:
		if st.AmountCents != sess.AmountCents || !strings.EqualFold(st.Currency, Currency) {
			return sess, fmt.Errorf("%w: session %s is %d %s, the provider says %d %s were paid", ErrCheckoutMismatch, sess.ID, sess.AmountCents, Currency, st.AmountCents, strings.ToUpper(st.Currency))
		}
		sess.PaymentRef = st.PaymentRef
		return s.credit(ctx, tx, sess, now)
	case OutcomeExpired, OutcomeFailed:
		sess.Status = CheckoutExpired
		if st.Outcome == OutcomeFailed {
			sess.Failure = "the payment failed (checkout.session.async_payment_failed)"
		}
		return sess, tx.FinishCheckoutSession(ctx, sess)
	default:
		return sess, nil
	}
}

// credit posts a session's top-up and completes it; the caller holds the
// session's row and has checked it is open.
func (s *Service) credit(ctx context.Context, tx WriteTx, sess CheckoutSession, now time.Time) (CheckoutSession, error) {
	op, err := ledger.TopUp("topup:"+sess.ID, sess.AppID, sess.AmountCents, "checkout "+sess.ID)
	if err != nil {
		return sess, err
	}
	results, errs, err := ledger.Apply(ctx, tx, now, []ledger.Operation{op})
	if err != nil {
		return sess, err
	}
	if errs[0] != nil {
		return sess, errs[0]
	}
	sess.Status, sess.OperationID, sess.CompletedAt = CheckoutCompleted, results[0].Operation.ID, now
	return sess, tx.FinishCheckoutSession(ctx, sess)
}

// DefaultCheckoutReconcileAge is how old an open session must be, and how
// long since it was last asked about, before ReconcileCheckouts asks the
// provider about it.
const DefaultCheckoutReconcileAge = 15 * time.Minute

// reconcileBatch is how many sessions one claim takes.
const reconcileBatch = 50

// ReconcileResult counts what one ReconcileCheckouts pass did.
type ReconcileResult struct {
	Credited, Closed, Open, Errors int
}

// ReconcileCheckouts asks the provider about the sessions still open that
// were created, and last asked about, more than CheckoutReconcileAge ago
// (DefaultCheckoutReconcileAge when 0), and applies its answer through
// ApplyCheckout, exactly as its webhook would have: a webhook that never
// came (an outage, a misconfigured endpoint) cannot leave a paid top-up
// uncredited. Each claim stamps the sessions, so several instances share
// the work and a session is asked about at most once per age. Providers
// that are not a CheckoutLookup (the test provider: its page completes
// sessions in the server itself) have nothing to reconcile.
func (s *Service) ReconcileCheckouts(ctx context.Context) (ReconcileResult, error) {
	ctx = txunit.Detached(ctx)
	var res ReconcileResult
	lookup, ok := s.Provider.(CheckoutLookup)
	if !ok {
		return res, nil
	}
	age := s.CheckoutReconcileAge
	if age <= 0 {
		age = DefaultCheckoutReconcileAge
	}
	for {
		var batch []CheckoutSession
		now := s.now()
		err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
			var err error
			batch, err = tx.ClaimOpenCheckoutSessions(ctx, s.Provider.Name(), now, age, reconcileBatch)
			return err
		})
		if err != nil {
			return res, err
		}
		for _, sess := range batch {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			attrs := []any{"session_id", sess.ID, "provider_ref", sess.ProviderRef, "app_id", sess.AppID, "amount_cents", sess.AmountCents}
			st, err := lookup.LookupCheckout(ctx, sess.ProviderRef)
			if err == nil {
				// The session id is the server's: a lookup answers for the
				// reference it was asked about.
				st.SessionID, st.ProviderRef = sess.ID, sess.ProviderRef
				var out CheckoutSession
				out, _, err = s.ApplyCheckout(ctx, st, ProviderEvent{})
				switch {
				case err != nil:
				case out.Status == CheckoutCompleted:
					res.Credited++
					s.log().InfoContext(ctx, "checkout reconciliation: the provider says paid; wallet credited", attrs...)
					continue
				case out.Status == CheckoutExpired:
					res.Closed++
					s.log().InfoContext(ctx, "checkout reconciliation: the session closed unpaid", append(attrs, "outcome", st.Outcome)...)
					continue
				default:
					res.Open++
					continue
				}
			}
			res.Errors++
			s.log().ErrorContext(ctx, "checkout reconciliation: could not settle the session; it is asked about again later", append(attrs, "error", err.Error())...)
		}
		if len(batch) < reconcileBatch {
			return res, nil
		}
	}
}
