package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/txunit"
)

// What a provider says happened to the payment of a completed top-up
// (PaymentEvent.Kind). The first three move money (a Reversal); the
// dispute's opening and closing only inform an operator.
const (
	// PaymentRefunded: the payment was refunded, in part or in full, at the
	// provider (Stripe: charge.refunded; the amount is the charge's
	// cumulative amount_refunded).
	PaymentRefunded = "refund"
	// PaymentDisputeWithdrawn: a dispute's funds were withdrawn (Stripe:
	// charge.dispute.funds_withdrawn; the amount is the dispute's).
	PaymentDisputeWithdrawn = "dispute_withdrawn"
	// PaymentDisputeReinstated: a dispute's funds were given back, the
	// dispute won (Stripe: charge.dispute.funds_reinstated).
	PaymentDisputeReinstated = "dispute_reinstated"
	// PaymentDisputeOpened and PaymentDisputeClosed move no money (Stripe:
	// charge.dispute.created, charge.dispute.closed).
	PaymentDisputeOpened = "dispute_created"
	PaymentDisputeClosed = "dispute_closed"
)

// PaymentEvent is a provider's notice about the payment of a top-up after it
// was credited: a refund, or a step of a dispute.
type PaymentEvent struct {
	Kind       string // PaymentRefunded, PaymentDispute…
	PaymentRef string // the payment (Stripe: the PaymentIntent, pi_…)
	ChargeID   string // Stripe: ch_…
	DisputeID  string // Stripe: dp_…; "" for a refund
	// AmountCents is, for a refund, what was refunded of the charge in all
	// (cumulative); for a dispute, the disputed amount.
	AmountCents int64
	Currency    string // ISO 4217, any case
	Status      string // the dispute's status (won, lost, …), for the record
	Reason      string // the dispute's reason (fraudulent, …), for the record
}

// Reversal is one movement of a top-up's money after its credit: table
// checkout_reversals, keyed by its ledger operation's key.
type Reversal struct {
	Key       string // the ledger key: stripe:refund:<charge>:<cumulative>, stripe:dispute:<dispute>:withdrawn|reinstated
	SessionID string
	AppID     string
	Kind      string // PaymentRefunded, PaymentDisputeWithdrawn or PaymentDisputeReinstated
	ChargeID  string
	DisputeID string
	// AmountCents is what the wallet moved (negative: debited). Zero when
	// nothing moved: a reinstatement seen before its withdrawal (and the
	// withdrawal then), or a movement capped at the session's amount.
	AmountCents int64
	// ReportedCents is what the provider reported: a refund's cumulative
	// amount, a dispute's amount.
	ReportedCents int64
	OperationID   string // the ledger operation; "" when nothing moved
	EventID       string // the provider event that made it
	CreatedAt     time.Time
}

// PaymentOutcome is what ApplyPaymentEvent did.
type PaymentOutcome struct {
	Session CheckoutSession
	// Reversal is the movement recorded; zero Key when none (a notice, or
	// an event that adds nothing to what was already applied).
	Reversal Reversal
	// WantedCents is the wallet movement the event asked for before the
	// cap at the session's amount (Reversal.AmountCents after it).
	WantedCents int64
	// Note says what was done, for the provider_events row and the log.
	Note string
}

// Capped reports whether the movement was cut to keep the session's
// refunds and disputes within its amount.
func (o PaymentOutcome) Capped() bool { return o.WantedCents != o.Reversal.AmountCents }

// PaymentLookup is a provider that can name the checkout session a payment
// belongs to (Stripe: the Checkout Session of a PaymentIntent). It finds
// the sessions completed before their payment was stored.
type PaymentLookup interface {
	CheckoutByPayment(ctx context.Context, paymentRef string) (st CheckoutState, found bool, err error)
}

// Errors of ApplyPaymentEvent beside ErrUnknownSession (a payment of another
// integration: acknowledged and ignored).
var (
	// ErrPaymentRefused: the event cannot apply to the session it names (a
	// currency other than the session's, a session that closed unpaid):
	// nothing moves; an operator looks.
	ErrPaymentRefused = errors.New("payments: the provider's payment event disagrees with the stored session")
	// ErrSessionNotCredited: the session is still open, its credit not
	// applied yet (its webhook is late): the event must come again later,
	// after the credit (the provider redelivers; the reconciliation pass
	// completes the session meanwhile).
	ErrSessionNotCredited = errors.New("payments: the session is not credited yet; deliver the event again later")
)

// errAskProvider: the payment is not stored on any session; ask the
// provider which session it paid, then run again.
var errAskProvider = errors.New("payments: payment not stored; ask the provider")

// ApplyPaymentEvent applies what the provider says happened to the payment
// of a completed top-up, in one transaction with its provider event (a
// redelivered event id has no effect and reports duplicate):
//
//   - a refund debits the wallet by what was refunded of the charge and not
//     yet debited (the event's amount is cumulative);
//   - a dispute's funds withdrawn debit the disputed amount;
//   - its funds reinstated credit back what the withdrawal debited;
//   - a dispute opened or closed moves nothing.
//
// Each movement posts a ledger.ProcessorAdjustment under a key derived from
// the provider's ids, records a Reversal and an audit entry (actor stripe,
// action app.stripe_refund or app.stripe_dispute). A debit may take the
// wallet below zero (the credits were spent: the app owes them). The
// session's row is locked, so the events of one payment apply one after
// the other, and the reversals of a session never exceed its amount in
// total: an event that says more is cut to what is left
// (PaymentOutcome.Capped, which the caller logs at ERROR).
//
// The session is found by its stored payment (CheckoutSession.PaymentRef);
// a session completed before payments were stored is found through the
// provider (PaymentLookup), once, and its payment stored then.
func (s *Service) ApplyPaymentEvent(ctx context.Context, pe PaymentEvent, ev ProviderEvent) (out PaymentOutcome, duplicate bool, err error) {
	ctx = txunit.Detached(ctx)
	var hint *CheckoutState // what the provider said, once asked
	for {
		out, duplicate, err = s.applyPaymentEvent(ctx, pe, ev, hint)
		if !errors.Is(err, errAskProvider) {
			return out, duplicate, err
		}
		lookup := s.Provider.(PaymentLookup) // errAskProvider only when it is one
		st, found, err := lookup.CheckoutByPayment(ctx, pe.PaymentRef)
		if err != nil {
			return PaymentOutcome{}, false, fmt.Errorf("payments: asking the provider about payment %s: %w", pe.PaymentRef, err)
		}
		if !found {
			st = CheckoutState{} // asked: none
		}
		hint = &st
	}
}

func (s *Service) applyPaymentEvent(ctx context.Context, pe PaymentEvent, ev ProviderEvent, hint *CheckoutState) (out PaymentOutcome, duplicate bool, err error) {
	var refused error
	err = s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		out, refused = PaymentOutcome{}, nil
		now := s.now()
		sess, err := s.paymentSession(ctx, tx, pe.PaymentRef, hint)
		if err == nil {
			out, err = s.applyPayment(ctx, tx, sess, pe, ev.ID, now)
		}
		if errors.Is(err, ErrUnknownSession) || errors.Is(err, ErrPaymentRefused) {
			refused, err = err, nil // recorded below, nothing else written
		}
		if err != nil || ev.ID == "" {
			return err
		}
		ev.Outcome = out.Note
		return s.recordEvent(ctx, tx, ev, firstOf(pe.DisputeID, pe.ChargeID), refused, now)
	})
	switch {
	case errors.Is(err, errDuplicateEvent):
		return PaymentOutcome{}, true, nil
	case err != nil:
		return PaymentOutcome{}, false, err
	}
	return out, false, refused
}

// paymentSession locks the session the payment paid: by its stored payment,
// else by what the provider said (hint), storing the payment on it.
func (s *Service) paymentSession(ctx context.Context, tx WriteTx, ref string, hint *CheckoutState) (CheckoutSession, error) {
	if ref == "" {
		return CheckoutSession{}, fmt.Errorf("%w: the event names no payment", ErrUnknownSession)
	}
	sess, found, err := tx.CheckoutSessionByPaymentRef(ctx, s.Provider.Name(), ref, true)
	if err != nil || found {
		return sess, err
	}
	if hint == nil {
		if _, ok := s.Provider.(PaymentLookup); ok {
			return CheckoutSession{}, errAskProvider
		}
		return CheckoutSession{}, fmt.Errorf("%w: no session was paid by %s", ErrUnknownSession, ref)
	}
	if hint.SessionID == "" {
		return CheckoutSession{}, fmt.Errorf("%w: the provider names no session of payment %s", ErrUnknownSession, ref)
	}
	sess, found, err = tx.CheckoutSession(ctx, hint.SessionID, true)
	switch {
	case err != nil:
		return CheckoutSession{}, err
	case !found || sess.Provider != s.Provider.Name() || sess.ProviderRef != hint.ProviderRef:
		// Another integration's session, or a client_reference_id that
		// happens to look like ours on another provider session.
		return CheckoutSession{}, fmt.Errorf("%w: payment %s paid provider session %s (reference %q)", ErrUnknownSession, ref, hint.ProviderRef, hint.SessionID)
	case sess.PaymentRef != "" && sess.PaymentRef != ref:
		return CheckoutSession{}, fmt.Errorf("%w: session %s was paid by %s, the event is about %s", ErrPaymentRefused, sess.ID, sess.PaymentRef, ref)
	}
	if sess.PaymentRef == "" && sess.Status == CheckoutCompleted {
		if err := tx.SetCheckoutPaymentRef(ctx, sess.ID, ref); err != nil {
			return CheckoutSession{}, err
		}
		sess.PaymentRef = ref
	}
	return sess, nil
}

// applyPayment is the event's effect on a locked session.
func (s *Service) applyPayment(ctx context.Context, tx WriteTx, sess CheckoutSession, pe PaymentEvent, eventID string, now time.Time) (PaymentOutcome, error) {
	out := PaymentOutcome{Session: sess}
	switch pe.Kind {
	case PaymentDisputeOpened, PaymentDisputeClosed:
		out.Note = fmt.Sprintf("%s (status %s, reason %s, %s %s)", pe.Kind, pe.Status, pe.Reason, EUR(pe.AmountCents), strings.ToUpper(pe.Currency))
		return out, s.auditPayment(ctx, tx, sess, pe, Reversal{}, out.Note, now)
	case PaymentRefunded, PaymentDisputeWithdrawn, PaymentDisputeReinstated:
	default:
		return out, fmt.Errorf("payments: unknown payment event kind %q", pe.Kind)
	}
	switch {
	case sess.Status == CheckoutOpen:
		return out, fmt.Errorf("%w: session %s", ErrSessionNotCredited, sess.ID)
	case sess.Status != CheckoutCompleted:
		return out, fmt.Errorf("%w: session %s closed unpaid (%s), yet the provider reports a %s of its payment", ErrPaymentRefused, sess.ID, sess.Status, pe.Kind)
	case !strings.EqualFold(pe.Currency, Currency):
		return out, fmt.Errorf("%w: session %s is in %s, the provider reports a %s of %d %s", ErrPaymentRefused, sess.ID, Currency, pe.Kind, pe.AmountCents, strings.ToUpper(pe.Currency))
	case pe.AmountCents < 0 || pe.ChargeID == "" || (pe.Kind != PaymentRefunded && pe.DisputeID == ""):
		return out, fmt.Errorf("%w: a %s of %d without its charge or dispute", ErrPaymentRefused, pe.Kind, pe.AmountCents)
	}
	done, err := tx.CheckoutReversals(ctx, sess.ID)
	if err != nil {
		return out, err
	}
	r, ok := nextReversal(sess, pe, done)
	if !ok {
		out.Note = "no effect: already applied (" + pe.Kind + ")"
		return out, nil
	}
	out.WantedCents = r.AmountCents
	// What is left to take back: the session's amount less what its
	// reversals took net (a reinstatement gives back).
	var taken int64
	for _, d := range done {
		taken -= d.AmountCents
	}
	if r.AmountCents < 0 && -r.AmountCents > sess.AmountCents-taken {
		r.AmountCents = -max(0, sess.AmountCents-taken)
	}
	r.SessionID, r.AppID, r.EventID, r.CreatedAt = sess.ID, sess.AppID, eventID, now
	note := reversalNote(sess, r)
	if r.AmountCents != 0 {
		op, err := ledger.ProcessorAdjustment(r.Key, sess.AppID, r.AmountCents, note)
		if err != nil {
			return out, err
		}
		results, errs, err := ledger.Apply(ctx, tx, now, []ledger.Operation{op})
		if err != nil {
			return out, err
		}
		if errs[0] != nil {
			return out, errs[0]
		}
		r.OperationID = results[0].Operation.ID
	}
	if err := tx.InsertCheckoutReversal(ctx, r); err != nil {
		return out, err
	}
	out.Reversal = r
	out.Note = fmt.Sprintf("%s: wallet %+d", pe.Kind, r.AmountCents)
	if out.Capped() {
		out.Note += fmt.Sprintf(" (capped from %+d at the session's amount)", out.WantedCents)
	}
	return out, s.auditPayment(ctx, tx, sess, pe, r, note, now)
}

// nextReversal is the movement pe asks for given the session's movements so
// far (before any cap); false when it adds nothing.
func nextReversal(sess CheckoutSession, pe PaymentEvent, done []Reversal) (Reversal, bool) {
	r := Reversal{Kind: pe.Kind, ChargeID: pe.ChargeID, DisputeID: pe.DisputeID, ReportedCents: pe.AmountCents}
	byKey := map[string]Reversal{}
	var refunded int64 // the charge's highest cumulative refund applied
	for _, d := range done {
		byKey[d.Key] = d
		if d.Kind == PaymentRefunded && d.ChargeID == pe.ChargeID {
			refunded = max(refunded, d.ReportedCents)
		}
	}
	withdrawn, reinstated := disputeKey(pe.DisputeID, "withdrawn"), disputeKey(pe.DisputeID, "reinstated")
	switch pe.Kind {
	case PaymentRefunded:
		// Refund events carry the cumulative amount and may arrive out of
		// order: only the part above the highest applied is new.
		if pe.AmountCents <= refunded {
			return r, false
		}
		r.Key, r.AmountCents = fmt.Sprintf("stripe:refund:%s:%d", pe.ChargeID, pe.AmountCents), -(pe.AmountCents - refunded)
	case PaymentDisputeWithdrawn:
		if _, ok := byKey[withdrawn]; ok {
			return r, false
		}
		r.Key, r.AmountCents = withdrawn, -pe.AmountCents
		if _, ok := byKey[reinstated]; ok {
			r.AmountCents = 0 // reinstated first (events are not ordered): net nothing
		}
	case PaymentDisputeReinstated:
		if _, ok := byKey[reinstated]; ok {
			return r, false
		}
		r.Key = reinstated
		if w, ok := byKey[withdrawn]; ok {
			r.AmountCents = -w.AmountCents // what the withdrawal took, after its cap
		}
	}
	return r, true
}

func disputeKey(disputeID, what string) string { return "stripe:dispute:" + disputeID + ":" + what }

// reversalNote is the ledger line's note.
func reversalNote(sess CheckoutSession, r Reversal) string {
	switch r.Kind {
	case PaymentRefunded:
		return fmt.Sprintf("stripe refund of checkout %s (charge %s)", sess.ID, r.ChargeID)
	case PaymentDisputeWithdrawn:
		return fmt.Sprintf("stripe dispute %s (charge %s): funds withdrawn", r.DisputeID, r.ChargeID)
	default:
		return fmt.Sprintf("stripe dispute %s (charge %s): funds reinstated", r.DisputeID, r.ChargeID)
	}
}

// ActorStripe is the audit log's actor of what the payment processor did.
const ActorStripe = "stripe"

// auditPayment writes the operators' audit entry of a payment event:
// app.stripe_refund or app.stripe_dispute, with the provider's ids and what
// the wallet moved.
func (s *Service) auditPayment(ctx context.Context, tx WriteTx, sess CheckoutSession, pe PaymentEvent, r Reversal, note string, now time.Time) error {
	action := "app.stripe_dispute"
	if pe.Kind == PaymentRefunded {
		action = "app.stripe_refund"
	}
	detail := map[string]any{
		"event": pe.Kind, "checkout_session_id": sess.ID, "payment_ref": pe.PaymentRef, "charge_id": pe.ChargeID,
		"reported_cents": pe.AmountCents, "wallet_cents": r.AmountCents, "note": note,
	}
	if pe.DisputeID != "" {
		detail["dispute_id"], detail["dispute_status"], detail["dispute_reason"] = pe.DisputeID, pe.Status, pe.Reason
	}
	if r.OperationID != "" {
		detail["operation_id"] = r.OperationID
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	return tx.InsertAdminAudit(ctx, apps.AuditEntry{ID: ids.New("aud"), Actor: ActorStripe, Action: action, Subject: sess.AppID, Detail: b, At: now})
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
