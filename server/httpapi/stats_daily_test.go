package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// GET /v1/stats/daily: one entry per UTC day on both sides, from the facts
// a click, its install and its clearing wrote; the campaign filter; the
// range's bounds.
func TestDailyStats(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		adv := e.register(snip())
		pub := e.register(appRequest("Pub", xpromo.PlatformMac))
		other := e.register(appRequest("Paint", xpromo.PlatformWin))
		cmp := e.createCampaign(adv, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":2000}`, adv.AppID))
		theirs := e.createCampaign(other, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":2000}`, other.AppID))

		now := e.clock.Now() // 2026-11-21 12:00 UTC
		clicked, cleared := now.Add(-50*time.Hour), now.Add(-1*time.Hour)
		e.topUp(adv.AppID, 50000, now.Add(-100*time.Hour))
		c := attribution.Chain{ID: "chn_daily", Nonce: "jti_daily", State: attribution.StateInstalled, CampaignID: cmp.CampaignID,
			PublisherAppID: pub.AppID, AdvertiserAppID: adv.AppID, Category: "games", Platform: xpromo.PlatformMac, PriceCents: 640,
			OfferedAt: clicked, ClickedAt: clicked, InstalledAt: clicked.Add(time.Minute), CreatedAt: clicked, UpdatedAt: clicked}
		h := ledger.Hold{ID: c.HoldID(), Advertiser: adv.AppID, Publisher: pub.AppID, Amount: 640, ChainID: c.ID}
		require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			_, err := tx.InsertChain(ctx, c)
			return err
		}))
		e.postAt(c.InstalledAt, must(ledger.EscrowHold("hold:"+c.ID, h)))
		e.postAt(cleared, must(ledger.Clear("clear:"+c.ID, h, ledger.EarnCash)))
		c.State, c.ActivatedAt, c.ResolvedAt, c.UpdatedAt = attribution.StateCleared, cleared, cleared, cleared
		require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			return tx.UpdateChains(ctx, []attribution.Chain{c})
		}))
		earn, _, _ := ledger.Split(640, ledger.EarnCash)

		daily := func(key, query string) response { return e.do("GET", "/v1/stats/daily"+query, key, nil) }
		res := daily(adv.APIKey, "?from=2026-11-18&to=2026-11-21")
		require.Equal(t, http.StatusOK, res.status, res.body)
		var page xpromo.DailyStatsPage
		res.decode(t, &page)
		want := xpromo.DailyStatsPage{From: "2026-11-18", To: "2026-11-21", Days: []xpromo.DayStats{
			{Day: "2026-11-18"},
			{Day: "2026-11-19", Advertiser: xpromo.AdvertiserDayStats{Clicks: 1, Installs: 1}},
			{Day: "2026-11-20"},
			{Day: "2026-11-21", Advertiser: xpromo.AdvertiserDayStats{Activated: 1, Cleared: 1, SpendCents: 640}},
		}}
		assert.Equal(t, want, page)
		// The publisher sees the same chain from its side.
		res = daily(pub.APIKey, "?from=2026-11-19&to=2026-11-21")
		page = xpromo.DailyStatsPage{}
		res.decode(t, &page)
		assert.Equal(t, []xpromo.DayStats{
			{Day: "2026-11-19", Publisher: xpromo.PublisherDayStats{Clicks: 1, Installs: 1}},
			{Day: "2026-11-20"},
			{Day: "2026-11-21", Publisher: xpromo.PublisherDayStats{Cleared: 1, EarnedCents: earn}},
		}, page.Days)
		// One campaign: its own figures; another app's campaign is 404.
		res = daily(adv.APIKey, "?from=2026-11-21&to=2026-11-21&campaign_id="+cmp.CampaignID)
		page = xpromo.DailyStatsPage{}
		res.decode(t, &page)
		require.NotNil(t, page.CampaignID)
		assert.Equal(t, cmp.CampaignID, *page.CampaignID)
		assert.Equal(t, int64(640), page.Days[0].Advertiser.SpendCents)
		res = daily(adv.APIKey, "?campaign_id="+theirs.CampaignID)
		assert.Equal(t, http.StatusNotFound, res.status, res.body)
		// Defaults: the 30 days ending today (UTC).
		res = daily(adv.APIKey, "")
		page = xpromo.DailyStatsPage{}
		res.decode(t, &page)
		assert.Equal(t, "2026-10-23", page.From)
		assert.Equal(t, "2026-11-21", page.To)
		assert.Len(t, page.Days, 30)
		// Bounds: 366 days at most, dates as YYYY-MM-DD, from ≤ to.
		assert.Equal(t, http.StatusOK, daily(adv.APIKey, "?from=2025-11-21&to=2026-11-21").status)
		for q, code := range map[string]string{
			"?from=2025-11-20&to=2026-11-21": "date_range_too_long",
			"?from=2026-11-22&to=2026-11-21": "invalid_date_range",
			"?from=21-11-2026":               "invalid_date",
			"?to=2026-11-21T00:00:00Z":       "invalid_date",
		} {
			res := daily(adv.APIKey, q)
			assert.Equal(t, http.StatusUnprocessableEntity, res.status, q)
			assert.Equal(t, code, res.code(t), q)
		}
		assert.Equal(t, http.StatusUnauthorized, daily("", "").status)
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
