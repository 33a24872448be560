package stripe

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v85"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/jsonbound"
	"github.com/xpromo/xpromo/server/payments"
)

// DefaultTolerance is how far a Stripe-Signature timestamp may be from the
// server's clock (Stripe's libraries use the same 5 minutes).
const DefaultTolerance = 300 * time.Second

// Checkout events the webhook acts on; any type not named here is
// acknowledged and ignored.
const (
	EventCheckoutCompleted     = "checkout.session.completed"
	EventAsyncPaymentSucceeded = "checkout.session.async_payment_succeeded"
	EventAsyncPaymentFailed    = "checkout.session.async_payment_failed"
	EventCheckoutExpired       = "checkout.session.expired"
)

// Events about a top-up's payment after its credit: refunds and disputes
// (docs/payments.md, "Refunds and disputes").
const (
	EventChargeRefunded         = "charge.refunded"
	EventDisputeCreated         = "charge.dispute.created"
	EventDisputeFundsWithdrawn  = "charge.dispute.funds_withdrawn"
	EventDisputeFundsReinstated = "charge.dispute.funds_reinstated"
	EventDisputeClosed          = "charge.dispute.closed"
)

// disputeKinds maps the dispute events to what the domain does.
var disputeKinds = map[string]string{
	EventDisputeCreated:         payments.PaymentDisputeOpened,
	EventDisputeFundsWithdrawn:  payments.PaymentDisputeWithdrawn,
	EventDisputeFundsReinstated: payments.PaymentDisputeReinstated,
	EventDisputeClosed:          payments.PaymentDisputeClosed,
}

// Checkouts is what the webhook needs of the payments domain.
type Checkouts interface {
	ApplyCheckout(ctx context.Context, st payments.CheckoutState, ev payments.ProviderEvent) (payments.CheckoutSession, bool, error)
	ApplyPaymentEvent(ctx context.Context, pe payments.PaymentEvent, ev payments.ProviderEvent) (payments.PaymentOutcome, bool, error)
}

// Webhook receives Stripe's events at POST /v1/stripe/webhook.
type Webhook struct {
	// Secrets are the endpoint's signing secrets (whsec_…): a signature by
	// any of them is accepted, so that a secret can be rolled (Stripe signs
	// with both during the roll).
	Secrets []string
	// Tolerance bounds the signature's age (0: DefaultTolerance).
	Tolerance time.Duration
	// Livemode is the mode of the server's Stripe key: events of the other
	// mode are acknowledged and ignored.
	Livemode bool
	Payments Checkouts
	// Now is the wall clock the signature's timestamp is checked against.
	Now func() time.Time
	Log *slog.Logger
}

// Signature errors (each answered 400 invalid_signature).
var (
	ErrNoSignature        = errors.New("no Stripe-Signature header")
	ErrBadSignatureHeader = errors.New("the Stripe-Signature header is not t=<unix time>,v1=<hex>")
	ErrNoValidSignature   = errors.New("no v1 signature of the Stripe-Signature header matches the body under a configured webhook secret")
	ErrTimestamp          = errors.New("the Stripe-Signature timestamp is outside the tolerance")
)

// Verify checks header (Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of
// "<t>.<payload>">[,v1=…]) against the raw payload under any of the
// secrets, and that t is within tolerance of now (either way).
func Verify(payload []byte, header string, secrets []string, now time.Time, tolerance time.Duration) error {
	if header == "" {
		return ErrNoSignature
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrBadSignatureHeader
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrBadSignatureHeader
	}
	matched := false
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts))
		mac.Write([]byte("."))
		mac.Write(payload)
		want := mac.Sum(nil)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				matched = true
			}
		}
	}
	if !matched {
		return ErrNoValidSignature
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w (%s; tolerance %s)", ErrTimestamp, d.Round(time.Second), tolerance)
	}
	return nil
}

// event is the part of a Stripe event the webhook reads.
type event struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Type     string `json:"type"`
	Livemode bool   `json:"livemode"`
	Data     struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// Receive verifies and applies one delivery: a checkout session's events
// (ApplyCheckout), or a refund or dispute of a top-up's payment
// (ApplyPaymentEvent). An error is the HTTP answer (400 invalid_signature
// for a bad signature, 400 json_too_deep, json_too_wide or
// json_key_too_long for a signed body beyond jsonbound.Request, which no
// Stripe event comes near, 400 malformed_json for a body that is not an event,
// 409 payment_not_credited for a refund or dispute of a session not
// credited yet, else a 500; Stripe redelivers on either); nil answers 200, also for events ignored
// (another type, another mode, a session or payment of another
// integration, a duplicate) and for refused ones (an amount or currency
// that disagrees with the session: logged at ERROR, nothing moved, since
// redelivery would not change it).
func (w *Webhook) Receive(ctx context.Context, payload []byte, header string) error {
	tol := w.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	if err := Verify(payload, header, w.Secrets, now(), tol); err != nil {
		w.log().WarnContext(ctx, "stripe webhook refused", "error", err.Error())
		return apperr.New(apperr.InvalidSignature, "%s", err.Error())
	}
	if err := jsonbound.Check(payload, jsonbound.Request); err != nil {
		return boundRefusal(err)
	}
	var ev event
	if err := json.Unmarshal(payload, &ev); err != nil || ev.ID == "" || ev.Object != "event" {
		return apperr.New(apperr.MalformedJSON, "the body is not a Stripe event")
	}
	attrs := []any{"event_id", ev.ID, "event_type", ev.Type}
	if ev.Livemode != w.Livemode {
		w.log().WarnContext(ctx, "stripe webhook: event of the other mode ignored (is the endpoint registered in the right mode?)", append(attrs, "livemode", ev.Livemode)...)
		return nil
	}
	var st payments.CheckoutState
	switch ev.Type {
	case EventCheckoutCompleted, EventAsyncPaymentSucceeded, EventAsyncPaymentFailed, EventCheckoutExpired:
		var cs stripego.CheckoutSession
		if err := json.Unmarshal(ev.Data.Object, &cs); err != nil || cs.ID == "" {
			return apperr.New(apperr.MalformedJSON, "the event's data.object is not a checkout session")
		}
		st = sessionState(&cs)
		switch ev.Type {
		case EventAsyncPaymentSucceeded:
			st.Outcome = payments.OutcomePaid
		case EventAsyncPaymentFailed:
			st.Outcome = payments.OutcomeFailed
		case EventCheckoutExpired:
			st.Outcome = payments.OutcomeExpired
		}
		attrs = append(attrs, "provider_ref", cs.ID, "session_id", cs.ClientReferenceID)
	case EventChargeRefunded:
		var ch stripego.Charge
		if err := json.Unmarshal(ev.Data.Object, &ch); err != nil || ch.ID == "" {
			return apperr.New(apperr.MalformedJSON, "the event's data.object is not a charge")
		}
		pe := payments.PaymentEvent{Kind: payments.PaymentRefunded, ChargeID: ch.ID, AmountCents: ch.AmountRefunded, Currency: string(ch.Currency)}
		if ch.PaymentIntent != nil {
			pe.PaymentRef = ch.PaymentIntent.ID
		}
		return w.payment(ctx, ev, pe, attrs)
	case EventDisputeCreated, EventDisputeFundsWithdrawn, EventDisputeFundsReinstated, EventDisputeClosed:
		var dp stripego.Dispute
		if err := json.Unmarshal(ev.Data.Object, &dp); err != nil || dp.ID == "" {
			return apperr.New(apperr.MalformedJSON, "the event's data.object is not a dispute")
		}
		pe := payments.PaymentEvent{Kind: disputeKinds[ev.Type], DisputeID: dp.ID, AmountCents: dp.Amount, Currency: string(dp.Currency),
			Status: string(dp.Status), Reason: string(dp.Reason)}
		if dp.Charge != nil {
			pe.ChargeID = dp.Charge.ID
		}
		if dp.PaymentIntent != nil {
			pe.PaymentRef = dp.PaymentIntent.ID
		}
		return w.payment(ctx, ev, pe, attrs)
	default:
		w.log().DebugContext(ctx, "stripe webhook: event type ignored", attrs...)
		return nil
	}
	sess, dup, err := w.Payments.ApplyCheckout(ctx, st, payments.ProviderEvent{ID: ev.ID, Type: ev.Type})
	switch {
	case errors.Is(err, payments.ErrUnknownSession):
		w.log().WarnContext(ctx, "stripe webhook: event about a session this server did not open; ignored", append(attrs, "error", err.Error())...)
		return nil
	case errors.Is(err, payments.ErrCheckoutMismatch):
		w.log().ErrorContext(ctx, "stripe webhook: session refused, nothing credited; reconcile with Stripe", append(attrs, "error", err.Error())...)
		return nil
	case err != nil:
		return err // 500: Stripe redelivers
	case dup:
		w.log().InfoContext(ctx, "stripe webhook: duplicate event, no effect", attrs...)
	default:
		w.log().InfoContext(ctx, "stripe webhook: event applied", append(attrs, "status", sess.Status, "app_id", sess.AppID, "amount_cents", sess.AmountCents)...)
	}
	return nil
}

// payment applies a refund or dispute event and logs what it did: WARN for
// every refund and dispute of one of our top-ups (an operator follows it
// up), ERROR for a refusal or a movement capped at the session's amount.
func (w *Webhook) payment(ctx context.Context, ev event, pe payments.PaymentEvent, attrs []any) error {
	attrs = append(attrs, "payment_intent", pe.PaymentRef, "charge_id", pe.ChargeID, "reported_cents", pe.AmountCents, "currency", pe.Currency)
	if pe.DisputeID != "" {
		attrs = append(attrs, "dispute_id", pe.DisputeID, "dispute_status", pe.Status, "dispute_reason", pe.Reason)
	}
	out, dup, err := w.Payments.ApplyPaymentEvent(ctx, pe, payments.ProviderEvent{ID: ev.ID, Type: ev.Type})
	switch {
	case errors.Is(err, payments.ErrUnknownSession):
		w.log().InfoContext(ctx, "stripe webhook: payment event about a payment this server did not take; ignored", append(attrs, "error", err.Error())...)
		return nil
	case errors.Is(err, payments.ErrPaymentRefused):
		w.log().ErrorContext(ctx, "stripe webhook: payment event refused, nothing moved; reconcile with Stripe", append(attrs, "error", err.Error())...)
		return nil
	case errors.Is(err, payments.ErrSessionNotCredited):
		w.log().WarnContext(ctx, "stripe webhook: payment event for a session not credited yet; Stripe redelivers it", append(attrs, "error", err.Error())...)
		// Not a server fault: a 409 (any non-2xx makes Stripe redeliver),
		// applied once the session's own event or the reconciliation pass
		// has credited it.
		return apperr.New(apperr.PaymentNotCredited, "session not credited yet; deliver this event again later")
	case err != nil:
		return err // 500: Stripe redelivers
	case dup:
		w.log().InfoContext(ctx, "stripe webhook: duplicate event, no effect", attrs...)
		return nil
	}
	attrs = append(attrs, "app_id", out.Session.AppID, "session_id", out.Session.ID, "wallet_cents", out.Reversal.AmountCents, "outcome", out.Note)
	if out.Capped() {
		w.log().ErrorContext(ctx, "stripe webhook: Stripe reports more refunded or disputed than the top-up; capped at the session's amount", append(attrs, "wanted_cents", out.WantedCents)...)
	}
	if out.Reversal.Key == "" && pe.Kind != payments.PaymentDisputeOpened && pe.Kind != payments.PaymentDisputeClosed {
		// A refund event older than one applied, a step already taken.
		w.log().InfoContext(ctx, "stripe webhook: payment event adds nothing to what was applied", attrs...)
		return nil
	}
	w.log().WarnContext(ctx, "stripe webhook: refund or dispute of a top-up", attrs...)
	return nil
}

func (w *Webhook) log() *slog.Logger {
	if w.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Log
}

// boundRefusal is the answer to a body beyond jsonbound.Request: the code
// the API gives any such body.
func boundRefusal(err error) error {
	var e *jsonbound.Error
	if !errors.As(err, &e) {
		return apperr.New(apperr.MalformedJSON, "the body is not a Stripe event: %v", err)
	}
	code := map[jsonbound.Kind]string{
		jsonbound.TooDeep: apperr.JSONTooDeep, jsonbound.TooWide: apperr.JSONTooWide, jsonbound.KeyTooLong: apperr.JSONKeyTooLong,
	}[e.Kind]
	return apperr.New(code, "%s", e.Error())
}
