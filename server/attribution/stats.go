package attribution

import (
	"context"
	"net/url"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/rollup"
)

// Chain returns a chain to one of the two apps it names (publisher or
// advertiser); for anyone else it is not_found, exactly as a missing one.
func (s *Service) Chain(ctx context.Context, callerAppID, chainID string) (Chain, error) {
	var c Chain
	var found bool
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		c, found, err = tx.ChainByID(ctx, chainID)
		return err
	})
	if err != nil {
		return Chain{}, err
	}
	if !found || callerAppID == "" || (c.PublisherAppID != callerAppID && c.AdvertiserAppID != callerAppID) {
		return Chain{}, apperr.New(apperr.NotFound, "chain not found")
	}
	return c, nil
}

// AppStats aggregates an advertiser app's chains and fills in [from, to]:
// what market stats report. Fills this instance counted but has not flushed
// yet are included. The part of from's day is read from the chains, the
// whole days after it from the daily rollups (package rollup), so the read
// does not grow with the history.
func (s *Service) AppStats(ctx context.Context, appID string, from, to time.Time) (ChainStats, error) {
	var out ChainStats
	w := rollup.Split(from, to)
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		if w.HasRaw {
			if out, err = tx.AppChainStats(ctx, appID, w.From, w.RawTo); err != nil {
				return err
			}
		}
		if !w.HasDays {
			return nil
		}
		days, err := tx.ChainStatsDays(ctx, appID, w.FirstDay, w.LastDay)
		out.Impressions += days.Impressions
		out.Clicks += days.Clicks
		out.FraudRejected = addCounts(out.FraudRejected, days.FraudRejected)
		return err
	})
	if err != nil {
		return ChainStats{}, err
	}
	out.Impressions += s.pendingFills(appID, from, to)
	if out.FraudRejected == nil {
		out.FraudRejected = map[string]int64{}
	}
	return out, nil
}

// NetworkStats aggregates the network's chains in [from, to], split between
// the chains and the rollups as AppStats is.
func (s *Service) NetworkStats(ctx context.Context, from, to time.Time) (NetworkStats, error) {
	var out NetworkStats
	w := rollup.Split(from, to)
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		if w.HasRaw {
			if out, err = tx.NetworkChainStats(ctx, w.From, w.RawTo); err != nil {
				return err
			}
		}
		if !w.HasDays {
			return nil
		}
		days, err := tx.NetworkChainStatsDays(ctx, w.FirstDay, w.LastDay)
		out.Chains += days.Chains
		out.FraudRejected += days.FraudRejected
		out.CPISum = addCounts(out.CPISum, days.CPISum)
		out.CPICount = addCounts(out.CPICount, days.CPICount)
		return err
	})
	return out, err
}

// addCounts adds b's counts into a (made when nil) and returns it.
func addCounts(a, b map[string]int64) map[string]int64 {
	if a == nil {
		a = map[string]int64{}
	}
	for k, n := range b {
		a[k] += n
	}
	return a
}

// pendingFills is the number of fills of an advertiser's campaigns
// counted in memory, not flushed yet, on days overlapping [from, to].
func (s *Service) pendingFills(advertiserAppID string, from, to time.Time) int64 {
	match := func(k fillKey) bool {
		return k.advertiser == advertiserAppID && !k.day.Before(day(from)) && !k.day.After(to)
	}
	return s.fills.sum(match) + s.unflushed(match)
}

// roundHalfUp is n/d rounded half up, for non-negative n and positive d.
func roundHalfUp(n, d int64) int64 { return (2*n + d) / (2 * d) }

func share(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// StatsFigures is what GET /apps/{app_id}/stats takes from the chains of
// an advertiser app over [from, to]: impressions (fills of its campaigns),
// clicks and fraud_rejected by code. The market computes the rest from the
// escrow holds, which are the chains' installs.
func (s *Service) StatsFigures(ctx context.Context, appID string, from, to time.Time) (xpromo.Stats, error) {
	cs, err := s.AppStats(ctx, appID, from, to)
	if err != nil {
		return xpromo.Stats{}, err
	}
	return xpromo.Stats{Impressions: cs.Impressions, Clicks: cs.Clicks, FraudRejected: cs.FraudRejected}, nil
}

// NetworkFigures is what GET /network-stats takes from the chains over
// [from, to]: fraud_pct = chains rejected by a fraud rule / all chains and
// refused claims (a fraction from 0 to 1, like clearing_rate, which the
// market computes from the escrow holds), and avg_cpi_by_category = the
// average cleared price per category, rounded half up.
func (s *Service) NetworkFigures(ctx context.Context, from, to time.Time) (xpromo.NetworkStats, error) {
	ns, err := s.NetworkStats(ctx, from, to)
	if err != nil {
		return xpromo.NetworkStats{}, err
	}
	out := xpromo.NetworkStats{FraudPct: share(ns.FraudRejected, ns.Chains), AvgCPIByCategory: map[string]int64{}}
	for cat, sum := range ns.CPISum {
		if n := ns.CPICount[cat]; n > 0 {
			out.AvgCPIByCategory[cat] = roundHalfUp(sum, n)
		}
	}
	return out, nil
}

// DailyRow is one side's figures of one UTC day in the daily rollups
// (migration 00032 names each figure's facts and day).
type DailyRow struct {
	Day                                                  time.Time // the UTC midnight
	Side                                                 string    // "advertiser" or "publisher"
	Fills, Clicks, Installs, Activated                   int64
	Cleared, Refunded, Rejected, SpendCents, EarnedCents int64
}

// DailyQuery is a parsed GET /v1/stats/daily: the UTC days From through To
// (midnights, both included), and CampaignID ("" for all).
type DailyQuery struct {
	From, To   time.Time
	CampaignID string
}

// DefaultDailyDays is the range of a daily query that names neither end:
// the 30 days ending today.
const DefaultDailyDays = 30

// ParseDailyQuery reads from and to (UTC dates YYYY-MM-DD; to defaults to
// today's, from to DefaultDailyDays−1 days before to) and campaign_id. A
// range over xpromo.MaxDailyStatsDays days is date_range_too_long: the
// answer has one entry per day, so its size is bounded by the range.
func ParseDailyQuery(v url.Values, today time.Time) (DailyQuery, error) {
	invalid := func(code, field, format string, args ...any) error {
		e := apperr.New(code, format, args...)
		e.Field = field
		return e
	}
	date := func(name string) (time.Time, bool, error) {
		if !v.Has(name) {
			return time.Time{}, false, nil
		}
		s := v.Get(name)
		d, err := time.Parse(time.DateOnly, s)
		if err != nil || len(s) != len(time.DateOnly) {
			return time.Time{}, false, invalid(apperr.InvalidDate, name, "%s must be a date of the form YYYY-MM-DD (a UTC day), got %q", name, s)
		}
		return d, true, nil
	}
	to, hasTo, err := date("to")
	if err != nil {
		return DailyQuery{}, err
	}
	from, hasFrom, err := date("from")
	if err != nil {
		return DailyQuery{}, err
	}
	if !hasTo {
		to = day(today)
		if hasFrom && from.After(to) {
			to = from
		}
	}
	if !hasFrom {
		from = to.AddDate(0, 0, 1-DefaultDailyDays)
	}
	if from.After(to) {
		return DailyQuery{}, invalid(apperr.InvalidRange, "from", "from (%s) is after to (%s)", from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	if n := int(to.Sub(from).Hours()/24) + 1; n > xpromo.MaxDailyStatsDays {
		return DailyQuery{}, invalid(apperr.DateRangeTooLong, "from", "from %s through to %s is %d days; at most %d are answered at once",
			from.Format(time.DateOnly), to.Format(time.DateOnly), n, xpromo.MaxDailyStatsDays)
	}
	q := DailyQuery{From: from, To: to}
	if v.Has("campaign_id") {
		if q.CampaignID = v.Get("campaign_id"); q.CampaignID == "" {
			return DailyQuery{}, invalid(apperr.NotFound, "campaign_id", "campaign not found")
		}
	}
	return q, nil
}

// DailyStats answers GET /v1/stats/daily for appID: one entry per UTC day
// of q, from the daily rollups (docs/stats.md), with the fills this
// instance counted and has not flushed yet. The caller checks that
// q.CampaignID is appID's.
func (s *Service) DailyStats(ctx context.Context, appID string, q DailyQuery) (xpromo.DailyStatsPage, error) {
	var rows []DailyRow
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		rows, err = tx.DailyStats(ctx, appID, q.CampaignID, q.From, q.To)
		return err
	})
	if err != nil {
		return xpromo.DailyStatsPage{}, err
	}
	out := xpromo.DailyStatsPage{From: q.From.Format(time.DateOnly), To: q.To.Format(time.DateOnly), Days: []xpromo.DayStats{}}
	if q.CampaignID != "" {
		out.CampaignID = &q.CampaignID
	}
	// Unflushed fills are of the last few seconds: today's, or yesterday's
	// just after midnight.
	recent := day(s.now()).AddDate(0, 0, -1)
	for d := q.From; !d.After(q.To); d = d.AddDate(0, 0, 1) {
		ds := xpromo.DayStats{Day: d.Format(time.DateOnly)}
		for len(rows) > 0 && !rows[0].Day.After(d) {
			r := rows[0]
			rows = rows[1:]
			if !r.Day.Equal(d) {
				continue
			}
			if r.Side == "publisher" {
				ds.Publisher = xpromo.PublisherDayStats{Impressions: r.Fills, Clicks: r.Clicks, Installs: r.Installs, Cleared: r.Cleared, EarnedCents: r.EarnedCents}
			} else {
				ds.Advertiser = xpromo.AdvertiserDayStats{Impressions: r.Fills, Clicks: r.Clicks, Installs: r.Installs, Activated: r.Activated,
					Cleared: r.Cleared, Refunded: r.Refunded, Rejected: r.Rejected, SpendCents: r.SpendCents}
			}
		}
		if d.Before(recent) {
			out.Days = append(out.Days, ds)
			continue
		}
		ds.Advertiser.Impressions += s.fills.sum(func(k fillKey) bool {
			return k.advertiser == appID && k.day.Equal(d) && (q.CampaignID == "" || k.campaign == q.CampaignID)
		})
		ds.Publisher.Impressions += s.fills.sum(func(k fillKey) bool {
			return k.publisher == appID && k.day.Equal(d) && (q.CampaignID == "" || k.campaign == q.CampaignID)
		})
		out.Days = append(out.Days, ds)
	}
	return out, nil
}
