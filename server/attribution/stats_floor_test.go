package attribution_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// TestStatsFloorIsTheOneThatApplied: a campaign buying productivity (floor
// 400 on mac) and finance (600) wins an uncontested fill in productivity.
// The API document says avg_clearing_price_cents equals floor_cents when
// nothing was contested, so floor_cents is the floor of what was bought
// (400), not the campaign's highest (600).
func TestStatsFloorIsTheOneThatApplied(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{})
		p := pair{pub: w.app("Publisher", xpromo.PlatformMac, "productivity"), adv: w.app("Advertiser", xpromo.PlatformMac, "")}
		p.pubKey, p.advKey = w.key(p.pub), w.key(p.adv)
		w.topUp(p.adv, 100_000)
		c, err := w.srv.Market.CreateCampaign(w.ctx, p.adv, market.CreateCampaignRequest{
			AppID: p.adv, Categories: []string{"productivity", "finance"}, DailyBudgetCents: 100_000,
		})
		require.NoError(t, err)
		p.campaign = c.ID

		stats, err := w.srv.Market.Stats(w.ctx, p.adv, xpromo.PeriodLast7Days)
		require.NoError(t, err)
		assert.Equal(t, int64(600), stats.FloorCents, "before anything cleared: the highest floor the campaigns may pay")
		assert.Equal(t, stats.FloorCents, stats.AvgClearingPriceCents)

		_, tok, err := w.clickAndInstall(p, "dev-1", residential)
		require.NoError(t, err)
		w.clock.Advance(50 * time.Hour)
		_, err = w.heartbeat(p.advKey, p.adv, "dev-1", tok, 1)
		require.NoError(t, err)
		_, err = w.attr.Sweep(w.ctx)
		require.NoError(t, err)

		stats, err = w.srv.Market.Stats(w.ctx, p.adv, xpromo.PeriodLast7Days)
		require.NoError(t, err)
		assert.Equal(t, int64(1), stats.Cleared)
		assert.Equal(t, int64(400), stats.AvgClearingPriceCents, "uncontested: charged the productivity floor")
		assert.Equal(t, int64(400), stats.FloorCents, "the floor that applied to the cleared install")
	})
}
