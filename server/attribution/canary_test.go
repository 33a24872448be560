package attribution_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/scoring"
	"github.com/xpromo/xpromo/server/storage"
)

// canaryRecord is what scoring reads of an app's canaries.
func (w *world) canaryRecord(app string) scoring.Canaries {
	w.t.Helper()
	require.NoError(w.t, w.attr.FlushFills(w.ctx))
	var c scoring.Canaries
	require.NoError(w.t, w.store.View(w.ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		c, err = tx.CanaryRecord(ctx, app)
		return err
	}))
	return c
}

// canaryFills fills p's slot n times with every fill a canary, and sorts
// the answers by variant.
func (w *world) canaryFills(p pair, n int) (lapsed, mismatch []attribution.Fill) {
	w.t.Helper()
	for range n {
		f, reason, err := w.fillSlot(p.pub, xpromo.SlotAboutWindow, xpromo.PlatformMac)
		require.NoError(w.t, err)
		require.Empty(w.t, reason, "a canary is a fill")
		o, c := f.Offer, f.Creative
		require.Equal(w.t, p.pub, o.Publisher)
		require.NoError(w.t, w.attr.MACKeys.Verify(o), "a canary is sealed like any offer")
		// Exactly one way to be unfit to show.
		isLapsed, isMismatch := !w.now().Before(o.Expires()), o.Advertiser != c.AdvertiserAppID
		require.True(w.t, isLapsed != isMismatch, "lapsed %v, mismatch %v", isLapsed, isMismatch)
		require.Equal(w.t, p.adv, c.AdvertiserAppID, "the creative is the auction's winner's")
		require.Equal(w.t, p.campaign, o.CampaignID)
		if isLapsed {
			require.LessOrEqual(w.t, o.OfferedAt, w.now().Add(-attribution.CanaryLapse).Unix(), "offered at least a day ago")
			lapsed = append(lapsed, f)
		} else {
			mismatch = append(mismatch, f)
		}
	}
	return lapsed, mismatch
}

// With every fill a canary: both variants are served, counted as canaries
// served to the publisher and not as impressions of the campaign; nothing
// is priced.
func TestCanaryServing(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		w.attr.CanaryRate = 1
		lapsed, mismatch := w.canaryFills(p, 24)
		assert.NotEmpty(t, lapsed, "lapsed canaries are served")
		assert.NotEmpty(t, mismatch, "mismatch canaries are served")
		assert.Equal(t, scoring.Canaries{Served: 24}, w.canaryRecord(p.pub))
		stats, err := w.attr.StatsFigures(w.ctx, p.adv, w.now().Add(-time.Hour), w.now())
		require.NoError(t, err)
		assert.Zero(t, stats.Impressions, "a canary is no impression of the campaign")

		// Disabled: live offers again, which are no canaries.
		w.attr.CanaryRate = 0
		o := w.fill(p.pub)
		assert.Equal(t, p.adv, o.Advertiser)
		tok := w.clickOffer(p, o, residential)
		_, err = w.claim(p, tok, "dev-live", 30*time.Second, residential)
		require.NoError(t, err)
		assert.Equal(t, scoring.Canaries{Served: 24}, w.canaryRecord(p.pub), "a clicked live offer is no canary")
		w.verify()
	})
}

// A click or claim on a canary, signed with the publisher's key, is
// recorded once per canary and answered exactly as an ordinary refused
// token of its kind: a lapsed one as any expired click, a mismatch one as a
// forged offer. Nobody else can put a canary click on the publisher.
func TestCanaryClicks(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		w.attr.CanaryRate = 1
		var lapsed, mismatch []attribution.Fill
		for len(lapsed) < 2 || len(mismatch) < 2 {
			l, m := w.canaryFills(p, 4)
			lapsed, mismatch = append(lapsed, l...), append(mismatch, m...)
		}
		w.attr.CanaryRate = 0

		// Framing: another app's key on the publisher's canary is refused
		// as a bad signature and records nothing.
		other := w.app("Other", xpromo.PlatformMac, "")
		tok := w.sign(w.key(other), mismatch[0].Offer, w.now())
		_, _, err := w.attr.Click(w.ctx, tok, residential)
		assert.Equal(t, apperr.FraudBadSignature, apperr.Code(err), "%v", err)
		assert.Zero(t, w.canaryRecord(p.pub).Clicked)

		// A lapsed canary clicked: fraud_token_expired, recorded as a
		// refused click like any other expired token.
		tok = w.sign(p.pubKey, lapsed[0].Offer, w.now())
		_, _, err = w.attr.Click(w.ctx, tok, residential)
		require.Equal(t, apperr.FraudTokenExpired, apperr.Code(err), "%v", err)
		assert.Contains(t, err.Error(), "recorded as rejected chain")
		assert.Equal(t, int64(1), w.canaryRecord(p.pub).Clicked)
		// Again: the same answer, still one canary click.
		_, _, err2 := w.attr.Click(w.ctx, tok, residential)
		assert.Equal(t, err.Error(), err2.Error())
		assert.Equal(t, int64(1), w.canaryRecord(p.pub).Clicked)

		// A mismatch canary clicked: the answer a forged offer MAC gets,
		// word for word, recorded nowhere but as a canary click.
		forged := mismatch[1].Offer
		forged.MAC = strings.Repeat("A", 43)
		_, _, want := w.attr.Click(w.ctx, w.sign(p.pubKey, forged, w.now()), residential)
		require.Equal(t, apperr.FraudBadSignature, apperr.Code(want), "%v", want)
		_, _, err = w.attr.Click(w.ctx, w.sign(p.pubKey, mismatch[0].Offer, w.now()), residential)
		assert.Equal(t, want.Error(), err.Error())
		assert.Equal(t, int64(2), w.canaryRecord(p.pub).Clicked)

		// Claims carrying canaries never clicked before: recorded (via the
		// install claim) and refused, whoever countersigns.
		w.clock.Advance(30 * time.Second)
		// (No SDK countersigns a token for another app than its own: a
		// mismatch canary's claim can only carry a bad countersignature.)
		tok = w.sign(p.pubKey, mismatch[1].Offer, w.now().Add(-30*time.Second))
		_, _, err = w.attr.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: "e30.e30.AAAA", IP: residential})
		assert.Equal(t, apperr.FraudBadCountersignature, apperr.Code(err), "%v", err)
		tok = w.sign(p.pubKey, lapsed[1].Offer, w.now().Add(-30*time.Second))
		cs := w.countersign(p.advKey, tok, "dev-2", w.now(), p.adv)
		_, _, err = w.attr.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: cs, IP: residential})
		assert.Equal(t, apperr.FraudTokenExpired, apperr.Code(err), "%v", err)
		assert.Equal(t, scoring.Canaries{Served: int64(len(lapsed) + len(mismatch)), Clicked: 4}, w.canaryRecord(p.pub))

		// No money moved, no install was accepted.
		for _, l := range w.wallet(p.adv) {
			assert.NotEqual(t, ledger.TypeEscrowHold, l.Type, "no hold for a canary")
		}
		w.verify()
	})
}

// A canary offer sealed before a MAC rotation is still recognised while
// the previous secret verifies offers.
func TestCanaryJTIAfterRotation(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		w.attr.CanaryRate = 1
		_, mismatch := w.canaryFills(p, 8)
		for len(mismatch) == 0 {
			_, mismatch = w.canaryFills(p, 8)
		}
		old := w.attr.MACKey
		w.attr.MACKey = token.MACKey{ID: "m_next", Secret: []byte(strings.Repeat("n", 32))}
		w.attr.MACKeys = token.MACKeys{old.ID: old.Secret, "m_next": w.attr.MACKey.Secret}
		_, _, err := w.attr.Click(w.ctx, w.sign(p.pubKey, mismatch[0].Offer, w.now()), residential)
		assert.Equal(t, apperr.FraudBadSignature, apperr.Code(err))
		assert.Equal(t, int64(1), w.canaryRecord(p.pub).Clicked)
	})
}
