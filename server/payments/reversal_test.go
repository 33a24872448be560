package payments_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/payments/stripe"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// paidTopUp opens a Stripe top-up of amount for app, pays it at the fake and
// delivers checkout.session.completed: the wallet is credited and the
// session's PaymentIntent stored.
func (f *stripeFixture) paidTopUp(t *testing.T, app string, amount int64) payments.CheckoutSession {
	t.Helper()
	sess, _, err := f.svc.TopUp(context.Background(), app, amount)
	require.NoError(t, err)
	paid := f.fake.Pay(sess.ProviderRef)
	require.NoError(t, f.deliver(t, "evt_paid_"+sess.ID, stripe.EventCheckoutCompleted, paid))
	got := f.session(t, sess.ID)
	require.Equal(t, payments.CheckoutCompleted, got.Status)
	require.Equal(t, paid["payment_intent"], got.PaymentRef, "the PaymentIntent is stored at completion")
	return got
}

func (f *stripeFixture) audit(t *testing.T) []apps.AuditEntry {
	t.Helper()
	var out []apps.AuditEntry
	require.NoError(t, f.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		var err error
		out, err = tx.AuditPage(ctx, nil, 100)
		return err
	}))
	return out
}

func stripeAudit(entries []apps.AuditEntry, action string) int {
	n := 0
	for _, e := range entries {
		if e.Actor == payments.ActorStripe && e.Action == action {
			n++
		}
	}
	return n
}

func TestStripeRefunds(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		sess := f.paidTopUp(t, "app_a", 10000)
		ch := "ch_refunded"

		// A partial refund, then the rest: amount_refunded is cumulative.
		require.NoError(t, f.deliver(t, "evt_refund_1", stripe.EventChargeRefunded, f.fake.Charge(sess.ProviderRef, ch, 3000)))
		assert.Equal(t, int64(7000), f.balance(t, "app_a"))
		require.NoError(t, f.deliver(t, "evt_refund_2", stripe.EventChargeRefunded, f.fake.Charge(sess.ProviderRef, ch, 10000)))
		assert.Equal(t, int64(0), f.balance(t, "app_a"))

		lines := f.wallet(t, "app_a")
		require.Len(t, lines, 3)
		for i, want := range []int64{-3000, -7000} {
			l := lines[i+1]
			assert.Equal(t, ledger.TypeAdjustment, l.Type)
			assert.Equal(t, want, l.Amount)
			assert.Equal(t, fmt.Sprintf("stripe refund of checkout %s (charge %s)", sess.ID, ch), l.Note)
		}

		// Redelivered, and an older event arriving late: no effect.
		require.NoError(t, f.deliver(t, "evt_refund_1", stripe.EventChargeRefunded, f.fake.Charge(sess.ProviderRef, ch, 3000)))
		require.NoError(t, f.deliver(t, "evt_refund_late", stripe.EventChargeRefunded, f.fake.Charge(sess.ProviderRef, ch, 3000)))
		assert.Len(t, f.wallet(t, "app_a"), 3)
		assert.Equal(t, 2, stripeAudit(f.audit(t), "app.stripe_refund"))
		assert.Contains(t, f.logs.String(), "refund or dispute of a top-up")
		assert.Contains(t, f.logs.String(), "duplicate event")

		// Stripe says more was refunded than the session was: capped, ERROR.
		other := f.paidTopUp(t, "app_a", 5000)
		require.NoError(t, f.deliver(t, "evt_refund_over", stripe.EventChargeRefunded, f.fake.Charge(other.ProviderRef, "ch_over", 6000)))
		assert.Equal(t, int64(0), f.balance(t, "app_a"))
		assert.Contains(t, f.logs.String(), "capped at the session's amount")
		f.verify(t)
	})
}

func TestStripeDisputeWithdrawnThenReinstated(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		sess := f.paidTopUp(t, "app_a", 5000)
		dp := func(status string) map[string]any {
			return f.fake.Dispute(sess.ProviderRef, "dp_won", "ch_won", 5000, status)
		}

		require.NoError(t, f.deliver(t, "evt_dp_created", stripe.EventDisputeCreated, dp("needs_response")))
		assert.Equal(t, int64(5000), f.balance(t, "app_a"), "a dispute opened moves nothing")
		require.NoError(t, f.deliver(t, "evt_dp_withdrawn", stripe.EventDisputeFundsWithdrawn, dp("needs_response")))
		assert.Equal(t, int64(0), f.balance(t, "app_a"))
		require.NoError(t, f.deliver(t, "evt_dp_reinstated", stripe.EventDisputeFundsReinstated, dp("won")))
		assert.Equal(t, int64(5000), f.balance(t, "app_a"))
		require.NoError(t, f.deliver(t, "evt_dp_closed", stripe.EventDisputeClosed, dp("won")))
		assert.Equal(t, int64(5000), f.balance(t, "app_a"))

		lines := f.wallet(t, "app_a")
		require.Len(t, lines, 3)
		assert.Equal(t, "stripe dispute dp_won (charge ch_won): funds withdrawn", lines[1].Note)
		assert.Equal(t, int64(-5000), lines[1].Amount)
		assert.Equal(t, "stripe dispute dp_won (charge ch_won): funds reinstated", lines[2].Note)
		assert.Equal(t, int64(5000), lines[2].Amount)
		assert.Equal(t, 4, stripeAudit(f.audit(t), "app.stripe_dispute"), "created, withdrawn, reinstated, closed")

		// Events are not ordered: a reinstatement seen before its withdrawal
		// nets nothing when the withdrawal comes.
		late := f.paidTopUp(t, "app_a", 6000)
		d := f.fake.Dispute(late.ProviderRef, "dp_unordered", "ch_unordered", 6000, "won")
		require.NoError(t, f.deliver(t, "evt_u_reinstated", stripe.EventDisputeFundsReinstated, d))
		require.NoError(t, f.deliver(t, "evt_u_withdrawn", stripe.EventDisputeFundsWithdrawn, d))
		assert.Equal(t, int64(11000), f.balance(t, "app_a"))
		f.verify(t)
	})
}

// A dispute lost after the credits were spent: the wallet goes below zero,
// and a negative wallet buys nothing and cannot be paid out.
func TestStripeDisputeLostLeavesNegativeWallet(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		ctx := context.Background()
		app := f.addApp(t, "app_adv", xpromo.AppStatusLive)
		f.earn(t, app, 6000, ledger.EarnCash) // cash earnings as a publisher: 4200
		sess := f.paidTopUp(t, app, 5000)
		// It advertised: an install of 9000 cleared, spending the top-up.
		h := ledger.Hold{ID: "hold_x", Advertiser: app, Publisher: "app_pub", Amount: 9000, ChainID: "chn_x"}
		f.post(t)(ledger.EscrowHold("hold:chn_x", h))
		f.post(t)(ledger.Clear("clear:chn_x", h, ledger.EarnCash))
		require.Equal(t, int64(200), f.balance(t, app))

		d := func(status string) map[string]any {
			return f.fake.Dispute(sess.ProviderRef, "dp_lost", "ch_lost", 5000, status)
		}
		require.NoError(t, f.deliver(t, "evt_lost", stripe.EventDisputeFundsWithdrawn, d("needs_response")))
		require.NoError(t, f.deliver(t, "evt_lost_closed", stripe.EventDisputeClosed, d("lost")))
		assert.Equal(t, int64(-4800), f.balance(t, app), "the wallet owes the credits it spent")
		lines := f.wallet(t, app)
		assert.Equal(t, ledger.TypeAdjustment, lines[len(lines)-1].Type)

		// It buys nothing: an install's escrow hold is refused.
		l := &ledger.Ledger{Store: f.store, Now: f.clock.Now}
		op, err := ledger.EscrowHold("hold:chn_y", ledger.Hold{ID: "hold_y", Advertiser: app, Publisher: "app_pub", Amount: 100, ChainID: "chn_y"})
		require.NoError(t, err)
		_, err = l.Post(ctx, op)
		assertCode(t, err, apperr.InsufficientFunds, 409)
		// And it cannot be paid out, cash earnings or not.
		require.NoError(t, f.svc.SetPayoutAccount(ctx, app, "acct_1Nv0FGQ9RKHgCVdK"))
		_, err = f.svc.Payout(ctx, app)
		assertCode(t, err, apperr.BelowMinimum, 409)
		assert.Empty(t, f.fake.Transfers())
		// An operator adjustment still cannot overdraw it further.
		_, err = f.svc.Adjust(ctx, app, -1, "more")
		assertCode(t, err, apperr.InsufficientFunds, 409)
		f.verify(t)
	})
}

func TestStripeConcurrentPaymentEvents(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		disputed := f.paidTopUp(t, "app_a", 5000)
		refunded := f.paidTopUp(t, "app_b", 8000)

		// Ten deliveries of one dispute event; ten of two refund events of
		// one charge (cumulative 2000 and 5000), racing.
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range 10 {
			wg.Go(func() {
				errs[i] = f.deliver(t, "evt_dp", stripe.EventDisputeFundsWithdrawn, f.fake.Dispute(disputed.ProviderRef, "dp_race", "ch_race", 5000, "needs_response"))
			})
			wg.Go(func() {
				cum := int64(2000)
				if i%2 == 1 {
					cum = 5000
				}
				errs[10+i] = f.deliver(t, fmt.Sprintf("evt_refund_%d", cum), stripe.EventChargeRefunded, f.fake.Charge(refunded.ProviderRef, "ch_refund_race", cum))
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		assert.Equal(t, int64(0), f.balance(t, "app_a"), "the dispute applied once")
		assert.Len(t, f.wallet(t, "app_a"), 2)
		assert.Equal(t, int64(3000), f.balance(t, "app_b"), "the refunds applied in total exactly what was refunded")
		f.verify(t)
	})
}

func TestStripePaymentEventsIgnoredOrRefused(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		sess := f.paidTopUp(t, "app_a", 5000)

		// Another integration's charge: acknowledged, ignored (Stripe was asked
		// which session its PaymentIntent belongs to: none).
		foreign := f.fake.Charge(sess.ProviderRef, "ch_foreign", 5000)
		foreign["payment_intent"] = "pi_someone_else"
		require.NoError(t, f.deliver(t, "evt_foreign", stripe.EventChargeRefunded, foreign))
		// A charge without a PaymentIntent (not a Checkout payment): ignored.
		delete(foreign, "payment_intent")
		require.NoError(t, f.deliver(t, "evt_no_pi", stripe.EventChargeRefunded, foreign))
		assert.Contains(t, f.logs.String(), "payment this server did not take")

		// A refund in another currency than the session's: refused, ERROR.
		usd := f.fake.Charge(sess.ProviderRef, "ch_usd", 5000)
		usd["currency"] = "usd"
		require.NoError(t, f.deliver(t, "evt_usd", stripe.EventChargeRefunded, usd))
		dp := f.fake.Dispute(sess.ProviderRef, "dp_usd", "ch_usd", 5000, "needs_response")
		dp["currency"] = "usd"
		require.NoError(t, f.deliver(t, "evt_dp_usd", stripe.EventDisputeFundsWithdrawn, dp))
		assert.Contains(t, f.logs.String(), "payment event refused, nothing moved")
		assert.Equal(t, int64(5000), f.balance(t, "app_a"))

		// A session not credited yet (its webhook is late): a 409
		// payment_not_credited, so that Stripe redelivers after the credit.
		open, _, err := f.svc.TopUp(context.Background(), "app_a", 6000)
		require.NoError(t, err)
		f.fake.Pay(open.ProviderRef)
		early := f.fake.Charge(open.ProviderRef, "ch_early", 6000)
		err = f.deliver(t, "evt_early", stripe.EventChargeRefunded, early)
		require.Error(t, err)
		assert.Equal(t, apperr.PaymentNotCredited, apperr.Code(err))
		require.NoError(t, f.deliver(t, "evt_paid_late", stripe.EventCheckoutCompleted, f.fake.Session(open.ProviderRef)))
		require.NoError(t, f.deliver(t, "evt_early", stripe.EventChargeRefunded, early), "the redelivery applies")
		assert.Equal(t, int64(5000), f.balance(t, "app_a"))
		f.verify(t)
	})
}

// A session completed before PaymentIntents were stored is found through
// Stripe once (its Checkout Session by payment_intent), then by the stored
// PaymentIntent.
func TestStripePaymentEventOfAnOlderSession(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newStripeFixture(t, s)
		sess, _, err := f.svc.TopUp(context.Background(), "app_a", 5000)
		require.NoError(t, err)
		paid := f.fake.Pay(sess.ProviderRef)
		withoutPI := f.fake.Session(sess.ProviderRef)
		delete(withoutPI, "payment_intent")
		require.NoError(t, f.deliver(t, "evt_paid_old", stripe.EventCheckoutCompleted, withoutPI))
		require.Empty(t, f.session(t, sess.ID).PaymentRef)

		require.NoError(t, f.deliver(t, "evt_r1", stripe.EventChargeRefunded, f.fake.Charge(sess.ProviderRef, "ch_old", 1000)))
		assert.Equal(t, int64(4000), f.balance(t, "app_a"))
		assert.Equal(t, paid["payment_intent"], f.session(t, sess.ID).PaymentRef, "stored once found")
		require.NoError(t, f.deliver(t, "evt_r2", stripe.EventChargeRefunded, f.fake.Charge(sess.ProviderRef, "ch_old", 1500)))
		assert.Equal(t, int64(3500), f.balance(t, "app_a"))
		assert.Equal(t, 1, f.fake.Requests[http.MethodGet+" /v1/checkout/sessions"], "Stripe asked once")
		f.verify(t)
	})
}
