package market

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/rollup"
)

// periodDays is the length of each reporting period.
var periodDays = map[xpromo.Period]int{
	xpromo.PeriodLast7Days:  7,
	xpromo.PeriodLast30Days: 30,
	xpromo.PeriodLast90Days: 90,
}

// NetworkPeriod is the window GET /network-stats covers.
const NetworkPeriod = xpromo.PeriodLast30Days

// Stats describes an app as an advertiser over period (the window ending
// now): the installs its campaigns bought, counted from the escrow holds
// opened for it.
//
//   - installs: holds opened for the app in the period;
//   - cleared: those of them charged (the install reached activated_48h);
//   - retention_48h: cleared / those of them resolved (charged or
//     released), 0 while none is resolved; holds released because their
//     publisher was suspended for fraud count neither way
//     (HoldStats.Retention);
//   - floor_cents: the floor that applied to what was bought: the average,
//     rounded half up, of the floors the cleared installs' offers were made
//     under (each install's category and platform, at its offer); before
//     anything cleared, the highest current floor among the app's campaigns
//     (0 without);
//   - avg_clearing_price_cents: the average charged amount, rounded half up,
//     and floor_cents when nothing cleared. An uncontested install is
//     charged its floor, so when nothing was contested the two are equal,
//     as the API document says, whatever mix of categories was bought;
//   - impressions, clicks and fraud_rejected count SDK events and rejected
//     chains, which do not exist yet: they are 0 and {} until attribution
//     records them, never estimated.
//
// With ChainStats set (the server wires attribution's), impressions, clicks
// and fraud_rejected come from the event chains (docs/attribution.md). The
// holds are the chains' installs (an escrow hold opens exactly when an
// install claim is accepted), so the other figures are the chains' too.
//
// period "" means the default (last_30_days); anything else not in the enum
// is invalid_period.
func (s *Service) Stats(ctx context.Context, appID string, period xpromo.Period) (xpromo.Stats, error) {
	if period == "" {
		period = xpromo.DefaultPeriod
	}
	days, ok := periodDays[period]
	if !ok {
		e := apperr.New(apperr.InvalidPeriod, "period must be one of last_7_days, last_30_days, last_90_days, not %q", period)
		e.Field = "period"
		return xpromo.Stats{}, e
	}
	now := s.Now().UTC()
	from := now.AddDate(0, 0, -days)
	// The chains' figures are read at the same time as the holds', each in
	// a transaction of its own (two transactions, as when they were read
	// one after the other), so the answer waits for the slower of the two,
	// not for their sum: each is a few round trips, and on a busy database
	// each round trip waits for its CPU (BENCHMARKS.md, "Stats in fewer
	// round trips").
	type chainFigures struct {
		stats xpromo.Stats
		err   error
	}
	var chains chan chainFigures
	if s.ChainStats != nil {
		chains = make(chan chainFigures, 1)
		go func() {
			cs, err := s.ChainStats(ctx, appID, from, now)
			chains <- chainFigures{cs, err}
		}()
	}
	out, err := s.holdFigures(ctx, appID, from, now)
	if chains == nil {
		return out, err
	}
	cs := <-chains
	if err != nil {
		return xpromo.Stats{}, err
	}
	if cs.err != nil {
		return xpromo.Stats{}, cs.err
	}
	out.Impressions, out.Clicks, out.FraudRejected = cs.stats.Impressions, cs.stats.Clicks, cs.stats.FraudRejected
	return out, nil
}

// holdFigures is Stats without the chains' figures (impressions, clicks
// and fraud_rejected: 0 and {}).
func (s *Service) holdFigures(ctx context.Context, appID string, from, now time.Time) (xpromo.Stats, error) {
	var out xpromo.Stats
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		hs, err := holdStats(ctx, tx, appID, from, now)
		if err != nil {
			return err
		}
		platform, _, found, err := tx.AppPlatformAndStatus(ctx, appID)
		if err != nil {
			return err
		}
		if !found {
			return apperr.New(apperr.NotFound, "app not found")
		}
		out = xpromo.Stats{
			Installs:      hs.Opened,
			Cleared:       hs.Charged,
			Retention48h:  hs.Retention(),
			FraudRejected: map[string]int64{},
		}
		if hs.FlooredCharged > 0 {
			out.FloorCents = roundedMean(hs.ChargedFloors, hs.FlooredCharged)
		} else {
			// Before anything (with a floor) cleared: the highest
			// current floor among the app's campaigns, read only then.
			campaigns, err := tx.AppCampaigns(ctx, appID)
			if err != nil {
				return err
			}
			current, err := floorIndex(ctx, tx)
			if err != nil {
				return err
			}
			for _, c := range campaigns {
				for _, k := range c.Categories {
					out.FloorCents = max(out.FloorCents, current[k][platform].FloorCents)
				}
			}
		}
		out.AvgClearingPriceCents = out.FloorCents
		if hs.Charged > 0 {
			out.AvgClearingPriceCents = roundedMean(hs.ChargedAmount, hs.Charged)
		}
		return nil
	})
	return out, err
}

// roundedMean is sum/n rounded half up (n > 0, sum ≥ 0).
func roundedMean(sum, n int64) int64 { return (2*sum + n) / (2 * n) }

func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

type networkSnapshot struct {
	stats xpromo.NetworkStats
	at    time.Time
}

// NetworkStats returns the network's figures over the last 30 days, as
// whole UTC days: today so far and the 29 days before it (rollup.Days), so
// that the read is 30 rows of the daily rollups a figure and none of the
// facts. (An app's /stats periods end now and start the same time of day N
// days before, their first part day read from the app's facts; the
// network's part day would be a whole network's day of chains and holds,
// a read that grows with the traffic: measured at full scale in
// BENCHMARKS.md, "A year of history".) clearing_rate = holds charged / holds resolved (charged or released) among
// the holds opened in the window, 0 while none is resolved. fraud_pct and
// avg_cpi_by_category need rejected chains and the categories chains carry,
// which attribution has not recorded yet: they are 0 and {} until then, never
// estimated. With NetworkChainStats set (the server wires attribution's),
// they come from the event chains. The figures are recomputed at most every
// NetworkStatsEvery.
func (s *Service) NetworkStats(ctx context.Context) (xpromo.NetworkStats, error) {
	if snap := s.network.Load(); snap != nil && !stale(s.Now(), snap.at, s.NetworkStatsEvery, DefaultNetworkStatsEvery) {
		return snap.stats, nil
	}
	s.netMu.Lock()
	defer s.netMu.Unlock()
	now := s.Now()
	if snap := s.network.Load(); snap != nil && !stale(now, snap.at, s.NetworkStatsEvery, DefaultNetworkStatsEvery) {
		return snap.stats, nil // computed while we waited
	}
	to := now.UTC()
	from := rollup.Days(periodDays[NetworkPeriod], to)
	var hs HoldStats
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		hs, err = holdStats(ctx, tx, "", from, to)
		return err
	})
	if err != nil {
		return xpromo.NetworkStats{}, err
	}
	stats := xpromo.NetworkStats{
		Period:           string(NetworkPeriod),
		ClearingRate:     ratio(hs.Charged, hs.Resolved),
		AvgCPIByCategory: map[string]int64{},
	}
	if s.NetworkChainStats != nil {
		cs, err := s.NetworkChainStats(ctx, from, to)
		if err != nil {
			return xpromo.NetworkStats{}, err
		}
		stats.FraudPct, stats.AvgCPIByCategory = cs.FraudPct, cs.AvgCPIByCategory
	}
	s.network.Store(&networkSnapshot{stats: stats, at: now})
	return stats, nil
}
