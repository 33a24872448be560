package conformance

import (
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Daily stats (additive: GET /v1/stats/daily, docs/stats.md): one entry
// per UTC day of a bounded range, both sides of the calling app.

func checkDailyStatsRange(c *C) {
	a := c.NewApp()
	p, err := a.Client.GetDailyStats(c.Ctx(), &xpromo.DailyStatsParams{From: "2026-02-27", To: "2026-03-02"})
	c.NoError(err, "daily stats")
	body := c.Last().JSON(c)
	requireKeys(c, "DailyStatsPage", body, "from", "to", "campaign_id", "days")
	want := []string{"2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02"}
	if len(p.Days) != len(want) {
		c.Errorf("2026-02-27 through 2026-03-02: %d days, want %d (one per UTC day, both ends included)", len(p.Days), len(want))
		return
	}
	for i, d := range p.Days {
		if d.Day != want[i] {
			c.Errorf("day %d is %s, want %s", i, d.Day, want[i])
		}
		// A new app has traded nothing.
		if (d.Advertiser != xpromo.AdvertiserDayStats{}) || (d.Publisher != xpromo.PublisherDayStats{}) {
			c.Errorf("a new app's %s is %+v, want zeros", d.Day, d)
		}
	}
	if p.CampaignID != nil {
		c.Errorf("campaign_id is %q without a campaign filter, want null", *p.CampaignID)
	}
	// The default range: 30 days ending today (UTC).
	p, err = a.Client.GetDailyStats(c.Ctx(), nil)
	c.NoError(err, "daily stats without a range")
	if len(p.Days) != 30 {
		c.Errorf("the default range has %d days, want 30", len(p.Days))
	}
	if to, err := time.Parse(time.DateOnly, p.To); err != nil || to.Sub(time.Now().UTC()) > 48*time.Hour || time.Now().UTC().Sub(to) > 48*time.Hour {
		c.Errorf("the default range ends %q, want today (UTC)", p.To)
	}
}

func checkDailyStatsBounds(c *C) {
	a := c.NewApp()
	_, err := a.Client.GetDailyStats(c.Ctx(), &xpromo.DailyStatsParams{From: "2025-01-01", To: "2026-01-02"})
	c.ExpectError(err, 422, "date_range_too_long", "367 days")
	_, err = a.Client.GetDailyStats(c.Ctx(), &xpromo.DailyStatsParams{From: "2026-01-02", To: "2026-01-01"})
	c.ExpectError(err, 422, "invalid_date_range", "from after to")
	_, err = a.Client.GetDailyStats(c.Ctx(), &xpromo.DailyStatsParams{From: "01/02/2026"})
	c.ExpectError(err, 422, "invalid_date", "a date not YYYY-MM-DD")
	other := c.NewApp()
	camp := createCampaign(c, other, nil)
	_, err = a.Client.GetDailyStats(c.Ctx(), &xpromo.DailyStatsParams{CampaignID: camp.CampaignID})
	c.ExpectError(err, 404, "not_found", "another app's campaign")
}
