package conformance

import (
	"net/http"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Stats: an app's figures per period; the network's (seed-api "Stats",
// "NetworkStats", "GET /apps/{app_id}/stats").
func statsChecks() []Check {
	return []Check{
		{"every period answers Stats with every field", checkStatsPeriods},
		{"an unknown period answers 422 invalid_period", checkStatsBadPeriod},
		{"with a campaign and nothing cleared, the average price is the floor", checkStatsFloor},
		{"network stats are public and well-formed", checkNetworkStats},
		{"daily stats answer one entry per UTC day of the range", checkDailyStatsRange},
		{"daily stats refuse a range over 366 days, bad dates and another app's campaign", checkDailyStatsBounds},
	}
}

func checkStatsPeriods(c *C) {
	a := c.NewApp()
	for _, p := range []xpromo.Period{"", xpromo.PeriodLast7Days, xpromo.PeriodLast30Days, xpromo.PeriodLast90Days} {
		s, err := a.Client.GetStats(c.Ctx(), a.ID, &xpromo.StatsParams{Period: p})
		c.NoError(err, "stats for period "+string(p))
		body := c.Last().JSON(c)
		requireKeys(c, "Stats", body, "impressions", "clicks", "installs", "cleared", "retention_48h", "fraud_rejected", "floor_cents", "avg_clearing_price_cents")
		if _, ok := body["fraud_rejected"].(map[string]any); !ok {
			c.Errorf("period %q: fraud_rejected is %v, want an object", p, body["fraud_rejected"])
		}
		// A new app has traded nothing.
		if s.Impressions != 0 || s.Clicks != 0 || s.Installs != 0 || s.Cleared != 0 || s.Retention48h != 0 || len(s.FraudRejected) != 0 {
			c.Errorf("period %q: a new app's stats are %+v, want zeros", p, s)
		}
		if s.AvgClearingPriceCents != s.FloorCents {
			c.Errorf("period %q: avg_clearing_price_cents %d, floor_cents %d: equal when nothing was contested", p, s.AvgClearingPriceCents, s.FloorCents)
		}
	}
}

func checkStatsBadPeriod(c *C) {
	a := c.NewApp()
	for _, p := range []string{"last_8_days", "LAST_7_DAYS", "7d"} {
		_, err := a.Client.GetStats(c.Ctx(), a.ID, &xpromo.StatsParams{Period: xpromo.Period(p)})
		c.ExpectError(err, 422, "invalid_period", "period "+p)
	}
	err := a.Client.Do(c.Ctx(), http.MethodGet, "/v1/apps/"+a.ID+"/stats?period=", nil, nil)
	c.ExpectError(err, 422, "invalid_period", "an empty period")
}

func checkStatsFloor(c *C) {
	a := c.NewApp()
	camp := createCampaign(c, a, nil)
	s, err := a.Client.GetStats(c.Ctx(), a.ID, nil)
	c.NoError(err, "stats")
	if s.FloorCents != camp.FloorCents {
		c.Errorf("stats floor_cents %d, the app's only campaign's floor is %d", s.FloorCents, camp.FloorCents)
	}
	if s.AvgClearingPriceCents != s.FloorCents {
		c.Errorf("avg_clearing_price_cents %d with nothing cleared, want floor_cents %d", s.AvgClearingPriceCents, s.FloorCents)
	}
}

func checkNetworkStats(c *C) {
	ns, err := c.Public().GetNetworkStats(c.Ctx())
	c.NoError(err, "network stats")
	body := c.Last().JSON(c)
	requireKeys(c, "NetworkStats", body, "period", "clearing_rate", "fraud_pct", "avg_cpi_by_category")
	if ns.Period == "" {
		c.Errorf("network stats name no period")
	}
	if ns.ClearingRate < 0 || ns.ClearingRate > 1 {
		c.Errorf("clearing_rate %v is not a share from 0 to 1", ns.ClearingRate)
	}
	// "fraud_pct": a share, whether written as a fraction or a percentage.
	if ns.FraudPct < 0 || ns.FraudPct > 100 {
		c.Errorf("fraud_pct %v is not a share", ns.FraudPct)
	}
	if _, ok := body["avg_cpi_by_category"].(map[string]any); !ok {
		c.Errorf("avg_cpi_by_category is %v, want an object", body["avg_cpi_by_category"])
	}
	for k, v := range ns.AvgCPIByCategory {
		if v < 0 {
			c.Errorf("avg_cpi_by_category[%q] = %d", k, v)
		}
	}
}
