package stripe_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	stripego "github.com/stripe/stripe-go/v85"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/payments/stripe"
	"github.com/xpromo/xpromo/server/payments/stripe/stripetest"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestVerifySignature(t *testing.T) {
	const secret, old = "whsec_current", "whsec_previous"
	body, header := stripetest.SignedEvent(t, "evt_1", stripe.EventCheckoutCompleted, map[string]any{"id": "cs_1"}, secret, now)
	tol := stripe.DefaultTolerance

	require.NoError(t, stripe.Verify(body, header, []string{secret}, now, tol))
	require.NoError(t, stripe.Verify(body, header, []string{old, secret}, now, tol), "any configured secret (rotation)")
	require.NoError(t, stripe.Verify(body, header, []string{secret}, now.Add(tol), tol), "at the edge of the tolerance")

	// Stripe signs with both secrets while one is rolled: two v1 values.
	_, header2 := stripetest.SignedEvent(t, "evt_1", stripe.EventCheckoutCompleted, map[string]any{"id": "cs_1"}, old, now)
	both := header + "," + header2[strings.Index(header2, "v1="):]
	require.NoError(t, stripe.Verify(body, both, []string{old}, now, tol))

	tampered := []byte(strings.Replace(string(body), "cs_1", "cs_2", 1))
	for name, tc := range map[string]struct {
		body    []byte
		header  string
		secrets []string
		at      time.Time
		want    error
	}{
		"tampered body":         {tampered, header, []string{secret}, now, stripe.ErrNoValidSignature},
		"other secret":          {body, header, []string{"whsec_other"}, now, stripe.ErrNoValidSignature},
		"too old (replayed)":    {body, header, []string{secret}, now.Add(tol + time.Second), stripe.ErrTimestamp},
		"from the future":       {body, header, []string{secret}, now.Add(-tol - time.Second), stripe.ErrTimestamp},
		"no header":             {body, "", []string{secret}, now, stripe.ErrNoSignature},
		"no timestamp":          {body, header[strings.Index(header, "v1="):], []string{secret}, now, stripe.ErrBadSignatureHeader},
		"timestamp changed":     {body, strings.Replace(header, fmt.Sprint(now.Unix()), fmt.Sprint(now.Unix()+1), 1), []string{secret}, now, stripe.ErrNoValidSignature},
		"v0 only":               {body, strings.Replace(header, "v1=", "v0=", 1), []string{secret}, now, stripe.ErrBadSignatureHeader},
		"garbage":               {body, "nonsense", []string{secret}, now, stripe.ErrBadSignatureHeader},
		"no secrets configured": {body, header, nil, now, stripe.ErrNoValidSignature},
	} {
		t.Run(name, func(t *testing.T) {
			err := stripe.Verify(tc.body, tc.header, tc.secrets, tc.at, tol)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1"}`), "t=1,v1=00")
	f.Add([]byte(``), "t=,v1=,v1=zz,,=")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		// Never panics, never accepts without the secret.
		if err := stripe.Verify(body, header, []string{"whsec_fuzz"}, now, stripe.DefaultTolerance); err == nil {
			t.Fatalf("accepted %q", header)
		}
	})
}

func loopbackClient() *outbound.Options {
	return &outbound.Options{TestOnlyAllowLoopback: true, Timeout: 20 * time.Second}
}

func provider(url string) *stripe.Provider {
	return stripe.New(stripe.Config{SecretKey: "sk_test_xpromo", APIURL: url, HTTPClient: outbound.New(*loopbackClient()),
		SuccessURL: "https://xpromo.example/", ConnectCountry: "DE", MaxNetworkRetries: stripego.Int64(0)})
}

// stripe-mock validates every request against Stripe's OpenAPI document:
// it proves the requests' shapes (and that Stripe accepts them), not state.
func TestAgainstStripeMock(t *testing.T) {
	p := provider(stripetest.StartMock(t))
	ctx := context.Background()

	co, err := p.CreateCheckout(ctx, payments.CheckoutRequest{SessionID: "cs_06hxyz", AppID: "app_1", AmountCents: 5000,
		Currency: "EUR", ExpiresAt: time.Now().Add(24 * time.Hour)})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(co.ProviderRef, "cs_"), co.ProviderRef)
	assert.True(t, strings.HasPrefix(co.URL, "https://"), co.URL)

	st, err := p.LookupCheckout(ctx, co.ProviderRef)
	require.NoError(t, err)
	assert.NotEmpty(t, st.ProviderRef)

	// The sessions of a PaymentIntent (refunds and disputes of sessions
	// completed before their PaymentIntent was stored): stripe-mock answers
	// its fixture, which is not this PaymentIntent's, so none is taken.
	_, found, err := p.CheckoutByPayment(ctx, "pi_xpromo_unknown")
	require.NoError(t, err)
	assert.False(t, found)

	tr, err := p.Transfer(ctx, payments.TransferRequest{PayoutID: "po_1", AppID: "app_1", Destination: "acct_1Nv0FGQ9RKHgCVdK",
		AmountCents: 7000, Currency: "EUR", IdempotencyKey: "po_1"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(tr.TransferID, "tr_"), tr.TransferID)

	// The listing request is well-formed; stripe-mock's fixture transfer
	// is not of this group, so it is not taken for the payout's.
	_, found, err = p.FindTransfer(ctx, payments.TransferRequest{PayoutID: "po_1", Destination: "acct_1", AmountCents: 7000, Currency: "EUR"})
	require.NoError(t, err)
	assert.False(t, found)

	acct, err := p.CreateAccount(ctx, "app_1")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(acct, "acct_"), acct)
	link, err := p.OnboardingLink(ctx, acct, "https://xpromo.example/", "https://xpromo.example/")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(link, "https://"), link)
	as, err := p.Account(ctx, acct)
	require.NoError(t, err)
	assert.NotEmpty(t, as.AccountID)
}

func TestAgainstFake(t *testing.T) {
	fake := stripetest.NewFake(t)
	p := provider(fake.URL)
	ctx := context.Background()

	req := payments.CheckoutRequest{SessionID: "cs_ours", AppID: "app_1", AmountCents: 5000, Currency: "EUR", ExpiresAt: now.Add(24 * time.Hour)}
	co, err := p.CreateCheckout(ctx, req)
	require.NoError(t, err)
	again, err := p.CreateCheckout(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, co, again, "the idempotency key per top-up: one Stripe session")
	s := fake.Session(co.ProviderRef)
	assert.Equal(t, "cs_ours", s["client_reference_id"])
	assert.Equal(t, "eur", s["currency"])
	assert.EqualValues(t, 5000, s["amount_total"])
	assert.Equal(t, "payment", s["mode"])

	st, err := p.LookupCheckout(ctx, co.ProviderRef)
	require.NoError(t, err)
	assert.Equal(t, payments.CheckoutState{ProviderRef: co.ProviderRef, SessionID: "cs_ours", Outcome: payments.OutcomeOpen, AmountCents: 5000, Currency: "eur"}, st)
	_, found, err := p.CheckoutByPayment(ctx, "pi_none")
	require.NoError(t, err)
	assert.False(t, found)
	paid := fake.Pay(co.ProviderRef)
	st, err = p.LookupCheckout(ctx, co.ProviderRef)
	require.NoError(t, err)
	assert.Equal(t, payments.OutcomePaid, st.Outcome)
	assert.Equal(t, paid["payment_intent"], st.PaymentRef)
	byPayment, found, err := p.CheckoutByPayment(ctx, st.PaymentRef)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, st, byPayment, "the session of its PaymentIntent")
	fake.SetSession(co.ProviderRef, map[string]any{"status": "expired", "payment_status": "unpaid"})
	st, err = p.LookupCheckout(ctx, co.ProviderRef)
	require.NoError(t, err)
	assert.Equal(t, payments.OutcomeExpired, st.Outcome)

	// Transfers: one per idempotency key, found by transfer_group.
	tr := payments.TransferRequest{PayoutID: "po_9", AppID: "app_1", Destination: "acct_9", AmountCents: 7000, Currency: "EUR", IdempotencyKey: "po_9"}
	_, found, err = p.FindTransfer(ctx, tr)
	require.NoError(t, err)
	assert.False(t, found)
	a, err := p.Transfer(ctx, tr)
	require.NoError(t, err)
	b, err := p.Transfer(ctx, tr)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Len(t, fake.Transfers(), 1)
	assert.Equal(t, "po_9", fake.Transfers()[0]["transfer_group"])
	got, found, err := p.FindTransfer(ctx, tr)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, a, got)
	other := tr
	other.AmountCents = 1
	_, _, err = p.FindTransfer(ctx, other)
	assert.Error(t, err, "a transfer of the group that disagrees with the payout is not taken for it")

	// Refusals: a 400 is definite; a 500 leaves the outcome unknown.
	fake.FailTransfers = 400
	_, err = p.Transfer(ctx, payments.TransferRequest{PayoutID: "po_10", Destination: "acct_9", AmountCents: 7000, Currency: "EUR", IdempotencyKey: "po_10"})
	require.Error(t, err)
	assert.False(t, errors.Is(err, payments.ErrTransferUnknown))
	assert.Contains(t, err.Error(), "balance_insufficient")
	fake.FailTransfers = 500
	_, err = p.Transfer(ctx, payments.TransferRequest{PayoutID: "po_11", Destination: "acct_9", AmountCents: 7000, Currency: "EUR", IdempotencyKey: "po_11"})
	assert.ErrorIs(t, err, payments.ErrTransferUnknown)

	// Connect.
	acct, err := p.CreateAccount(ctx, "app_1")
	require.NoError(t, err)
	acct2, err := p.CreateAccount(ctx, "app_1")
	require.NoError(t, err)
	assert.Equal(t, acct, acct2, "one account per app (idempotency key)")
	link, err := p.OnboardingLink(ctx, acct, "", "")
	require.NoError(t, err)
	assert.Contains(t, link, acct)
	as, err := p.Account(ctx, acct)
	require.NoError(t, err)
	assert.False(t, as.PayoutsEnabled)
	assert.Equal(t, []string{"external_account", "tos_acceptance.date"}, as.RequirementsDue)
	assert.Equal(t, "requirements.past_due", as.DisabledReason)
}

func TestLivemode(t *testing.T) {
	assert.True(t, stripe.Livemode("sk_live_x"))
	assert.True(t, stripe.Livemode("rk_live_x"))
	assert.False(t, stripe.Livemode("sk_test_x"))
}

// recordingPayments is the payments domain as the webhook sees it,
// recording what it is asked to apply.
type recordingPayments struct{ events []payments.PaymentEvent }

func (r *recordingPayments) ApplyCheckout(ctx context.Context, st payments.CheckoutState, ev payments.ProviderEvent) (payments.CheckoutSession, bool, error) {
	return payments.CheckoutSession{}, false, nil
}

func (r *recordingPayments) ApplyPaymentEvent(ctx context.Context, pe payments.PaymentEvent, ev payments.ProviderEvent) (payments.PaymentOutcome, bool, error) {
	r.events = append(r.events, pe)
	return payments.PaymentOutcome{}, false, nil
}

// The refund and dispute events reach the domain with Stripe's fields; any
// data.object, however malformed, is a 200 or a 400, never a panic or a 500.
func FuzzReceivePaymentEvent(f *testing.F) {
	f.Add(stripe.EventChargeRefunded, `{"id":"ch_1","object":"charge","amount_refunded":300,"currency":"eur","payment_intent":"pi_1"}`)
	f.Add(stripe.EventDisputeFundsWithdrawn, `{"id":"dp_1","object":"dispute","amount":5000,"currency":"eur","charge":"ch_1","payment_intent":"pi_1","status":"needs_response","reason":"fraudulent"}`)
	f.Add(stripe.EventDisputeClosed, `{"id":"dp_1","charge":{"id":"ch_1"},"payment_intent":{"id":"pi_1"}}`)
	f.Add(stripe.EventChargeRefunded, `{"id":7}`)
	f.Add(stripe.EventDisputeCreated, `[]`)
	f.Add(stripe.EventChargeRefunded, strings.Repeat(`{"a":`, 40)+`1`+strings.Repeat(`}`, 40))
	f.Fuzz(func(t *testing.T, typ, obj string) {
		rec := &recordingPayments{}
		w := &stripe.Webhook{Secrets: []string{"whsec_fuzz"}, Payments: rec, Now: func() time.Time { return now }}
		body := fmt.Appendf(nil, `{"id":"evt_1","object":"event","type":%q,"livemode":false,"data":{"object":%s}}`, typ, obj)
		header := signed(body, "whsec_fuzz", now)
		err := w.Receive(context.Background(), body, header)
		if err != nil {
			var ae *apperr.Error
			if !errors.As(err, &ae) || apperr.HTTPStatus(err) != 400 {
				t.Fatalf("%s %s: %v", typ, obj, err)
			}
		}
	})
}

func TestReceivePaymentEvents(t *testing.T) {
	rec := &recordingPayments{}
	w := &stripe.Webhook{Secrets: []string{"whsec_x"}, Payments: rec, Now: func() time.Time { return now }}
	deliver := func(typ string, obj map[string]any) error {
		body, header := stripetest.SignedEvent(t, "evt_"+typ, typ, obj, "whsec_x", now)
		return w.Receive(context.Background(), body, header)
	}
	require.NoError(t, deliver(stripe.EventChargeRefunded, map[string]any{"id": "ch_1", "object": "charge", "amount_refunded": 300, "currency": "eur", "payment_intent": "pi_1"}))
	require.NoError(t, deliver(stripe.EventDisputeFundsReinstated, map[string]any{"id": "dp_1", "object": "dispute", "amount": 5000, "currency": "eur",
		"charge": "ch_2", "payment_intent": "pi_2", "status": "won", "reason": "fraudulent"}))
	assert.Equal(t, []payments.PaymentEvent{
		{Kind: payments.PaymentRefunded, PaymentRef: "pi_1", ChargeID: "ch_1", AmountCents: 300, Currency: "eur"},
		{Kind: payments.PaymentDisputeReinstated, PaymentRef: "pi_2", ChargeID: "ch_2", DisputeID: "dp_1", AmountCents: 5000, Currency: "eur", Status: "won", Reason: "fraudulent"},
	}, rec.events)
	assertMalformed := func(err error) {
		var ae *apperr.Error
		require.True(t, errors.As(err, &ae), "%v", err)
		assert.Equal(t, apperr.MalformedJSON, ae.Code)
	}
	assertMalformed(deliver(stripe.EventChargeRefunded, map[string]any{"object": "charge"}))
	assertMalformed(deliver(stripe.EventDisputeCreated, map[string]any{"id": 5}))
}

// signed is a Stripe-Signature header for body at ts.
func signed(body []byte, secret string, ts time.Time) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", ts.Unix())
	mac.Write(body)
	return fmt.Sprintf("t=%d,v1=%s", ts.Unix(), hex.EncodeToString(mac.Sum(nil)))
}
