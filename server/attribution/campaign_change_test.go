package attribution_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
)

// A campaign's daily budget changed through the market (PATCH
// /v1/campaigns/{campaign_id}) is what the next fills and install claims
// use; one lowered below the day's spend stops the campaign and the spend
// stands (docs/marketplace.md, "Reading and changing a campaign").
func TestCampaignBudgetChangeReachesClaims(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0) // a floor buyer: 400 a mac install
		setBudget := func(cents int64) market.Campaign {
			t.Helper()
			c, err := w.srv.Market.UpdateCampaign(w.ctx, p.adv, p.campaign, market.UpdateCampaignRequest{DailyBudgetCents: &cents})
			require.NoError(t, err)
			return c
		}
		noFill := func(what string) {
			t.Helper()
			_, reason, err := w.fillSlot(p.pub, xpromo.SlotAboutWindow, xpromo.PlatformMac)
			require.NoError(t, err)
			assert.Equal(t, xpromo.NoFillNoCampaign, reason, what)
		}
		lateClaim := func(device string) error {
			t.Helper()
			// An offer made before the change, claimed after it.
			tok := w.clickOffer(p, w.offer(p, "productivity", 400), residential)
			_, err := w.claim(p, tok, device, 30*time.Second, residential)
			return err
		}

		setBudget(1000)
		for i := range 2 {
			_, err := w.claim(p, w.click(p, residential), fmt.Sprint("dev-", i), 30*time.Second, residential)
			require.NoError(t, err)
		}
		noFill("200 cents of budget left, under the floor")
		assert.Equal(t, apperr.BudgetExhausted, apperr.Code(lateClaim("dev-late-1")))

		// Raised: the next fill and claim use the new budget at once.
		setBudget(1200)
		_, err := w.claim(p, w.click(p, residential), "dev-2", 30*time.Second, residential)
		require.NoError(t, err)
		got, err := w.srv.Market.GetCampaign(w.ctx, p.adv, p.campaign)
		require.NoError(t, err)
		assert.Equal(t, int64(1200), got.SpentTodayCents)

		// Lowered below the day's spend: accepted; nothing more today, and
		// the three holds stand.
		got = setBudget(1000)
		assert.Equal(t, int64(1000), got.DailyBudgetCents)
		assert.Equal(t, int64(1200), got.SpentTodayCents)
		noFill("over budget")
		assert.Equal(t, apperr.BudgetExhausted, apperr.Code(lateClaim("dev-late-2")))
		holds := 0
		for _, l := range w.wallet(p.adv) {
			assert.NotEqual(t, ledger.TypeEscrowRelease, l.Type, "nothing was released")
			if l.Type == ledger.TypeEscrowHold {
				holds++
			}
		}
		assert.Equal(t, 3, holds)

		// The next UTC day, the budget is whole again.
		w.clock.Advance(24 * time.Hour)
		_, err = w.claim(p, w.click(p, residential), "dev-3", 30*time.Second, residential)
		require.NoError(t, err)
		w.verify()
	})
}

// A raised bid is what the next auctioned fills award with.
func TestCampaignBidChangeReachesFills(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0) // a floor buyer: bids the floor, 400
		rival := w.app("Rival", xpromo.PlatformMac, "")
		w.topUp(rival, 100_000)
		w.campaign(rival, "productivity", 100_000, 600)
		// auctioned is the next fill that was not a reserved one (those go
		// at the floor, 400, to either campaign).
		auctioned := func() (advertiser string, price int64) {
			t.Helper()
			for range 10 { // 7 of every 10 are auctioned
				o := w.fill(p.pub)
				if o.PriceCents != 400 {
					return o.Advertiser, o.PriceCents
				}
			}
			t.Fatal("10 fills in a row at the floor")
			return "", 0
		}
		adv, price := auctioned()
		assert.Equal(t, rival, adv)
		assert.Equal(t, int64(401), price, "one cent above the floor buyer")

		bid := int64(900)
		_, err := w.srv.Market.UpdateCampaign(w.ctx, p.adv, p.campaign, market.UpdateCampaignRequest{SetMaxBid: true, MaxBidCents: &bid})
		require.NoError(t, err)
		adv, price = auctioned()
		assert.Equal(t, p.adv, adv, "the raised bid wins the next auction")
		assert.Equal(t, int64(601), price, "one cent above the rival")
	})
}
