package payments_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	stripego "github.com/stripe/stripe-go/v85"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/payments/stripe"
	"github.com/xpromo/xpromo/server/payments/stripe/stripetest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

const whsec = "whsec_xpromo_test"

// stripeFixture is a live-mode payments service whose provider is Stripe,
// against the stateful fake, with the webhook receiver in front of it.
type stripeFixture struct {
	*fixture
	fake *stripetest.Fake
	hook *stripe.Webhook
	logs *logBuffer
}

func newStripeFixture(t *testing.T, s storage.Store) *stripeFixture {
	f := newFixture(t, s, false)
	fake := stripetest.NewFake(t)
	f.svc.Provider = stripe.New(stripe.Config{SecretKey: "sk_test_xpromo", APIURL: fake.URL,
		HTTPClient: outbound.New(outbound.Options{TestOnlyAllowLoopback: true}), SuccessURL: "https://xpromo.example/",
		ConnectCountry: "DE", MaxNetworkRetries: stripego.Int64(0)})
	log, logs := newLog()
	f.svc.Log = log
	return &stripeFixture{fixture: f, fake: fake, logs: logs,
		hook: &stripe.Webhook{Secrets: []string{whsec}, Payments: f.svc, Now: f.clock.Now, Log: log}}
}

// deliver sends the webhook an event about a Stripe session, signed now.
func (f *stripeFixture) deliver(t *testing.T, eventID, typ string, session map[string]any) error {
	body, header := stripetest.SignedEvent(t, eventID, typ, session, whsec, f.clock.Now())
	return f.hook.Receive(context.Background(), body, header)
}

func (f *stripeFixture) session(t *testing.T, id string) payments.CheckoutSession {
	t.Helper()
	var sess payments.CheckoutSession
	require.NoError(t, f.svc.View(context.Background(), func(ctx context.Context, tx payments.Tx) error {
		var err error
		sess, _, err = tx.CheckoutSession(ctx, id, false)
		return err
	}))
	return sess
}

func TestStripeTopUpCreditedByWebhookOnce(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		ctx := context.Background()
		sess, url, err := f.svc.TopUp(ctx, "app_a", 7500)
		require.NoError(t, err)
		assert.Equal(t, "stripe", sess.Provider)
		assert.Contains(t, url, sess.ProviderRef, "checkout_url is Stripe's page")
		stripeSess := f.fake.Session(sess.ProviderRef)
		assert.Equal(t, sess.ID, stripeSess["client_reference_id"])

		// Completed but not paid yet (a delayed payment method): nothing.
		f.fake.SetSession(sess.ProviderRef, map[string]any{"status": "complete"})
		require.NoError(t, f.deliver(t, "evt_unpaid", stripe.EventCheckoutCompleted, f.fake.Session(sess.ProviderRef)))
		assert.Zero(t, f.balance(t, "app_a"))
		assert.Equal(t, payments.CheckoutOpen, f.session(t, sess.ID).Status)

		// Paid: concurrent deliveries of the same event and of the async
		// success event credit once.
		paid := f.fake.Pay(sess.ProviderRef)
		var wg sync.WaitGroup
		errs := make([]error, 10)
		for i := range errs {
			wg.Go(func() {
				if i%2 == 0 {
					errs[i] = f.deliver(t, "evt_paid", stripe.EventCheckoutCompleted, paid)
				} else {
					errs[i] = f.deliver(t, fmt.Sprintf("evt_async_%d", i), stripe.EventAsyncPaymentSucceeded, paid)
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		assert.Equal(t, int64(7500), f.balance(t, "app_a"))
		lines := f.wallet(t, "app_a")
		require.Len(t, lines, 1, "exactly one topup line")
		assert.Equal(t, "checkout "+sess.ID, lines[0].Note)
		got := f.session(t, sess.ID)
		assert.Equal(t, payments.CheckoutCompleted, got.Status)

		// Redelivered later: no effect.
		f.clock.Advance(time.Hour)
		require.NoError(t, f.deliver(t, "evt_paid", stripe.EventCheckoutCompleted, paid))
		assert.Equal(t, int64(7500), f.balance(t, "app_a"))
		assert.Contains(t, f.logs.String(), "duplicate event")
		f.verify(t)
	})
}

func TestStripeWebhookRefusals(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		ctx := context.Background()
		sess, _, err := f.svc.TopUp(ctx, "app_a", 5000)
		require.NoError(t, err)
		paid := f.fake.Pay(sess.ProviderRef)

		// Bad signatures: 400 invalid_signature, nothing applied.
		body, header := stripetest.SignedEvent(t, "evt_1", stripe.EventCheckoutCompleted, paid, "whsec_wrong", f.clock.Now())
		assertCode(t, f.hook.Receive(ctx, body, header), apperr.InvalidSignature, 400)
		body, header = stripetest.SignedEvent(t, "evt_1", stripe.EventCheckoutCompleted, paid, whsec, f.clock.Now().Add(-10*time.Minute))
		assertCode(t, f.hook.Receive(ctx, body, header), apperr.InvalidSignature, 400)
		body, header = stripetest.SignedEvent(t, "evt_1", stripe.EventCheckoutCompleted, paid, whsec, f.clock.Now())
		tampered := []byte(string(body[:len(body)-1]) + " }")
		assertCode(t, f.hook.Receive(ctx, tampered, header), apperr.InvalidSignature, 400)
		assert.Zero(t, f.balance(t, "app_a"))

		// An amount (or currency) other than the session's: refused, logged,
		// acknowledged (redelivery would not change it), nothing credited.
		wrong := f.fake.Session(sess.ProviderRef)
		wrong["amount_total"] = 500
		require.NoError(t, f.deliver(t, "evt_wrong_amount", stripe.EventCheckoutCompleted, wrong))
		wrong = f.fake.Session(sess.ProviderRef)
		wrong["currency"] = "usd"
		require.NoError(t, f.deliver(t, "evt_wrong_currency", stripe.EventCheckoutCompleted, wrong))
		assert.Zero(t, f.balance(t, "app_a"))
		assert.Contains(t, f.logs.String(), "session refused, nothing credited")
		assert.Equal(t, payments.CheckoutOpen, f.session(t, sess.ID).Status)

		// A session of another integration, another event type: ignored.
		other := map[string]any{"id": "cs_other", "object": "checkout.session", "client_reference_id": "order_17", "status": "complete", "payment_status": "paid", "amount_total": 5000, "currency": "eur"}
		require.NoError(t, f.deliver(t, "evt_other", stripe.EventCheckoutCompleted, other))
		require.NoError(t, f.deliver(t, "evt_charge", "charge.succeeded", map[string]any{"id": "ch_1", "object": "charge"}))
		// A session id of ours with another Stripe session: refused.
		forged := f.fake.Session(sess.ProviderRef)
		forged["id"] = "cs_forged"
		require.NoError(t, f.deliver(t, "evt_forged", stripe.EventCheckoutCompleted, forged))
		assert.Zero(t, f.balance(t, "app_a"))

		// The right event still credits.
		require.NoError(t, f.deliver(t, "evt_paid", stripe.EventCheckoutCompleted, paid))
		assert.Equal(t, int64(5000), f.balance(t, "app_a"))
		f.verify(t)
	})
}

func TestStripeExpiredAndFailedSessions(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		ctx := context.Background()
		expiring, _, err := f.svc.TopUp(ctx, "app_a", 5000)
		require.NoError(t, err)
		failing, _, err := f.svc.TopUp(ctx, "app_a", 6000)
		require.NoError(t, err)

		f.fake.SetSession(expiring.ProviderRef, map[string]any{"status": "expired"})
		require.NoError(t, f.deliver(t, "evt_exp", stripe.EventCheckoutExpired, f.fake.Session(expiring.ProviderRef)))
		got := f.session(t, expiring.ID)
		assert.Equal(t, payments.CheckoutExpired, got.Status)
		assert.Empty(t, got.Failure)

		f.fake.SetSession(failing.ProviderRef, map[string]any{"status": "complete", "payment_status": "unpaid"})
		require.NoError(t, f.deliver(t, "evt_fail", stripe.EventAsyncPaymentFailed, f.fake.Session(failing.ProviderRef)))
		got = f.session(t, failing.ID)
		assert.Equal(t, payments.CheckoutExpired, got.Status)
		assert.Contains(t, got.Failure, "payment failed")

		// A late success for a closed session credits nothing.
		require.NoError(t, f.deliver(t, "evt_late", stripe.EventAsyncPaymentSucceeded, f.fake.Pay(failing.ProviderRef)))
		assert.Zero(t, f.balance(t, "app_a"))
		f.verify(t)
	})
}

// A webhook that never came: the reconciliation pass asks Stripe and
// credits through the same code.
func TestStripeReconciliation(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		ctx := context.Background()
		paid, _, err := f.svc.TopUp(ctx, "app_a", 5000)
		require.NoError(t, err)
		open, _, err := f.svc.TopUp(ctx, "app_a", 6000)
		require.NoError(t, err)
		gone, _, err := f.svc.TopUp(ctx, "app_a", 7000)
		require.NoError(t, err)
		f.fake.Pay(paid.ProviderRef)
		f.fake.SetSession(gone.ProviderRef, map[string]any{"status": "expired"})

		res, err := f.svc.ReconcileCheckouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.ReconcileResult{}, res, "young sessions are left to their webhook")

		f.clock.Advance(payments.DefaultCheckoutReconcileAge + time.Second)
		res, err = f.svc.ReconcileCheckouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.ReconcileResult{Credited: 1, Closed: 1, Open: 1}, res)
		assert.Equal(t, int64(5000), f.balance(t, "app_a"))
		assert.Equal(t, payments.CheckoutCompleted, f.session(t, paid.ID).Status)
		assert.Equal(t, payments.CheckoutExpired, f.session(t, gone.ID).Status)
		assert.Equal(t, payments.CheckoutOpen, f.session(t, open.ID).Status)

		// Asked about again only an age later; the late webhook changes nothing.
		res, err = f.svc.ReconcileCheckouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.ReconcileResult{}, res)
		require.NoError(t, f.deliver(t, "evt_late", stripe.EventCheckoutCompleted, f.fake.Session(paid.ProviderRef)))
		f.fake.Pay(open.ProviderRef)
		f.clock.Advance(payments.DefaultCheckoutReconcileAge + time.Second)
		res, err = f.svc.ReconcileCheckouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.ReconcileResult{Credited: 1}, res)
		assert.Equal(t, int64(11000), f.balance(t, "app_a"))
		assert.Equal(t, 3, f.fake.Requests[http.MethodPost+" /v1/checkout/sessions"])
		f.verify(t)
	})
}

// A payout whose process died after Stripe made the transfer is recovered
// to sent with that transfer and one settlement.
func TestStripePayoutKilledAfterTransfer(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		ctx := context.Background()
		app := f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, app, 9000, ledger.EarnCash)

		// No connected account yet: payout_account_missing (live mode has no
		// implicit one).
		_, err := f.svc.Payout(ctx, app)
		assertCode(t, err, apperr.PayoutAccountMissing, 409)
		_, err = f.svc.PayoutAccountStatus(ctx, app)
		assertCode(t, err, apperr.PayoutAccountMissing, 409)

		// Onboarding creates one Express account and answers its link.
		o, err := f.svc.StartOnboarding(ctx, app)
		require.NoError(t, err)
		o2, err := f.svc.StartOnboarding(ctx, app)
		require.NoError(t, err)
		assert.Equal(t, o.AccountID, o2.AccountID)
		assert.Equal(t, 1, f.fake.Accounts())
		assert.Contains(t, o.URL, o.AccountID)
		st, err := f.svc.PayoutAccountStatus(ctx, app)
		require.NoError(t, err)
		assert.False(t, st.PayoutsEnabled)

		real := f.svc.Provider
		f.svc.Provider = crashAfterTransfer(real)
		_, err = f.svc.Payout(ctx, app)
		assertCode(t, err, apperr.Unavailable, 503)
		require.Len(t, f.fake.Transfers(), 1)
		pending := f.pendingPayout(t, app)

		f.svc.Provider = real // the restarted server
		f.clock.Advance(payments.DefaultPayoutGrace + time.Second)
		res, err := f.svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{Sent: 1}, res)
		got := f.payout(t, pending.ID)
		assert.Equal(t, payments.PayoutSent, got.Status)
		assert.Equal(t, f.fake.Transfers()[0]["id"], got.TransferID)
		assert.Len(t, f.fake.Transfers(), 1, "found by transfer_group, not made again")
		assert.Len(t, f.clearingLines(t, pending.ID), 2, "reserved once, settled once")
		assert.Len(t, f.payoutEvents(t, app), 1, "payout.sent once")
		assert.Zero(t, f.balance(t, app))
		f.verify(t)
	})
}
