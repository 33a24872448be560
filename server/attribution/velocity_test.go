package attribution_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// Claims refused for install velocity spend nothing: they take nothing from
// the campaign's budget, the wallet or delivery's headroom (nor from the
// throttled daily cap of an app not live yet), so the advertiser keeps
// getting fills (from other addresses) until its accepted installs alone
// reach its limit: the campaign's budget for a live app, EUR 50 a day for
// an approved or throttled one. Both with delivery rebuilt from the store
// between claims (the clock moves 30 seconds a claim, past the refresh
// interval) and with only its in-memory counters (Spent) moving.
func TestVelocityRefusalsKeepFills(t *testing.T) {
	for _, live := range []bool{true, false} {
		for _, rebuilds := range []bool{true, false} {
			t.Run(fmt.Sprintf("live=%v/rebuilds=%v", live, rebuilds), func(t *testing.T) { testVelocityRefusalsKeepFills(t, live, rebuilds) })
		}
	}
}

func testVelocityRefusalsKeepFills(t *testing.T, live, rebuilds bool) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		if !rebuilds {
			// Only changes made through the market service, a first trade
			// and Invalidate rebuild delivery.
			w.srv.Market.DeliveryRefreshEvery = 24 * time.Hour
		}
		const category = "games" // mac floor: 200
		p := pair{pub: w.app("Publisher", xpromo.PlatformMac, category), adv: w.app("Advertiser", xpromo.PlatformMac, "")}
		p.pubKey, p.advKey = w.key(p.pub), w.key(p.adv)
		const funds = 100_000
		w.topUp(p.adv, funds)
		// The campaign's budget: 30 installs at the floor, above the
		// throttled cap of 5,000 (25 installs). Limit is what stops fills.
		const budget = 6_000
		limit := int64(budget)
		if live {
			// Live, as the go-live rule makes it after 10 cleared installs.
			require.NoError(t, w.store.Update(w.ctx, func(ctx context.Context, tx storage.Tx) error {
				for _, to := range []xpromo.AppStatus{xpromo.AppStatusThrottled, xpromo.AppStatusLive} {
					if _, err := w.srv.Apps.Transition(ctx, tx, p.adv, to, "test", apps.ActorAdmin); err != nil {
						return err
					}
				}
				return nil
			}))
		} else {
			limit = market.DefaultThrottledDailyCapCents
		}
		p.campaign = w.campaign(p.adv, category, budget, 0)
		w.srv.Market.Invalidate()

		devices := 0
		device := func() string { devices++; return fmt.Sprintf("dev-vel-%d", devices) }
		var spent int64
		accepted := 0
		refused := 0

		// One address: 20 installs accepted, then fraud_install_velocity.
		busy := netip.MustParseAddr("81.2.69.160")
		for i := range attribution.DefaultIPInstalls + 5 {
			ch, _, err := w.clickAndInstall(p, device(), busy)
			if i < attribution.DefaultIPInstalls {
				require.NoError(t, err, "install %d", i+1)
				spent += ch.PriceCents
				accepted++
				continue
			}
			assertFraud(t, err, attribution.FraudInstallVelocity)
			refused++
		}
		require.Equal(t, 5, refused)

		// Fresh addresses: fills keep awarding the campaign until the
		// accepted installs alone reach the budget.
		fresh := 0
		for {
			f, reason, err := w.fillSlot(p.pub, xpromo.SlotAboutWindow, xpromo.PlatformMac)
			require.NoError(t, err)
			if reason != "" {
				require.Equal(t, xpromo.NoFillNoCampaign, reason)
				break
			}
			require.Equal(t, p.campaign, f.Offer.CampaignID)
			require.LessOrEqual(t, spent+f.Offer.PriceCents, limit, "a fill past the limit")
			fresh++
			ip := netip.AddrFrom4([4]byte{198, 51, 100, byte(fresh)})
			tok := w.clickOffer(p, f.Offer, ip)
			ch, err := w.claim(p, tok, device(), 30*time.Second, ip)
			require.NoError(t, err, "fresh install %d", fresh)
			spent += ch.PriceCents
			accepted++
			require.Less(t, fresh, 100, "fills never stop")
		}
		assert.Positive(t, fresh, "fills go on after the velocity refusals")
		// A rebuild from the store agrees: nothing left.
		w.srv.Market.Invalidate()
		_, reason, err := w.fillSlot(p.pub, xpromo.SlotAboutWindow, xpromo.PlatformMac)
		require.NoError(t, err)
		assert.Equal(t, xpromo.NoFillNoCampaign, reason)
		// Stopped by the limit, not by the refusals: less than a floor left.
		assert.Less(t, limit-spent, int64(200))
		if live {
			assert.Greater(t, spent, int64(market.DefaultThrottledDailyCapCents), "a live advertiser is past the throttled cap")
		}

		// The wallet paid the accepted installs' holds, and nothing else.
		var holds int64
		n := 0
		for _, l := range w.wallet(p.adv) {
			if l.Type == ledger.TypeEscrowHold {
				holds += -l.Amount
				n++
			}
		}
		assert.Equal(t, accepted, n, "one hold per accepted install")
		assert.Equal(t, spent, holds)
		w.verify()
	})
}
