package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/market"
)

// The reads of the daily rollups (migrations 00032, 00037 and 00043, docs/stats.md). Every
// day argument is a UTC midnight; both ends are included. A rollup row can
// hold 0 where every fact once counted moved elsewhere, hence the HAVING
// clauses: the raw queries never report a key with nothing in it.

func (t *tx) ChainStatsDays(ctx context.Context, appID string, from, to time.Time) (attribution.ChainStats, error) {
	s := attribution.ChainStats{FraudRejected: map[string]int64{}}
	err := t.query(ctx, `SELECT NULL::text, coalesce(sum(fills), 0)::bigint, coalesce(sum(clicks), 0)::bigint FROM stats_daily_apps
WHERE app_id = $1 AND side = 'advertiser' AND day BETWEEN ($2 AT TIME ZONE 'UTC')::date AND ($3 AT TIME ZONE 'UTC')::date
UNION ALL
SELECT reason, sum(chains)::bigint, 0 FROM stats_daily_rejections
WHERE app_id = $1 AND day BETWEEN ($2 AT TIME ZONE 'UTC')::date AND ($3 AT TIME ZONE 'UTC')::date AND reason LIKE 'fraud\_%'
GROUP BY reason HAVING sum(chains) <> 0`, []any{appID, from, to}, scanKeyed(&s.Impressions, &s.Clicks, func(reason string, n, _ int64) {
		s.FraudRejected[reason] = n
	}))
	return s, wrap(err, "reading an app's daily stats")
}

func (t *tx) NetworkChainStatsDays(ctx context.Context, from, to time.Time) (attribution.NetworkStats, error) {
	s := attribution.NetworkStats{CPISum: map[string]int64{}, CPICount: map[string]int64{}}
	err := t.query(ctx, `SELECT NULL::text, coalesce(sum(chains), 0)::bigint, coalesce(sum(chains_fraud), 0)::bigint FROM stats_daily_network_chains
WHERE day BETWEEN ($1 AT TIME ZONE 'UTC')::date AND ($2 AT TIME ZONE 'UTC')::date
UNION ALL
SELECT category, sum(cleared_cents)::bigint, sum(cleared)::bigint FROM stats_daily_categories
WHERE day BETWEEN ($1 AT TIME ZONE 'UTC')::date AND ($2 AT TIME ZONE 'UTC')::date
GROUP BY category HAVING sum(cleared) <> 0`, []any{from, to}, scanKeyed(&s.Chains, &s.FraudRejected, func(cat string, sum, n int64) {
		s.CPISum[cat], s.CPICount[cat] = sum, n
	}))
	return s, wrap(err, "reading the network's daily stats")
}

// holdStatsDays sums a table of stats_daily_holds' figures (the app's, or
// the network's shards of 00043) over a window of days.
const holdStatsDays = `SELECT coalesce(sum(opened), 0)::bigint, coalesce(sum(resolved), 0)::bigint, coalesce(sum(charged), 0)::bigint,
  coalesce(sum(charged_cents), 0)::bigint, coalesce(sum(floored), 0)::bigint, coalesce(sum(floor_cents), 0)::bigint,
  coalesce(sum(publisher_suspended), 0)::bigint
FROM %s WHERE day BETWEEN ($1 AT TIME ZONE 'UTC')::date AND ($2 AT TIME ZONE 'UTC')::date`

func (t *tx) AdvertiserHoldStatsDays(ctx context.Context, appID string, from, to time.Time) (market.HoldStats, error) {
	return t.holdStats(ctx, fmt.Sprintf(holdStatsDays, "stats_daily_holds")+` AND app_id = $3`, from, to, appID)
}

// NetworkHoldStatsDays reads the network's rows (00043: at most 64 a day),
// not every advertiser's.
func (t *tx) NetworkHoldStatsDays(ctx context.Context, from, to time.Time) (market.HoldStats, error) {
	return t.holdStats(ctx, fmt.Sprintf(holdStatsDays, "stats_daily_network_holds"), from, to)
}

// DailyStats reads an app's rows of stats_daily_apps (migration 00037: one
// a side and day, whatever the campaigns), or with a campaign that
// campaign's rows of stats_daily.
func (t *tx) DailyStats(ctx context.Context, appID, campaignID string, from, to time.Time) ([]attribution.DailyRow, error) {
	var out []attribution.DailyRow
	query, args := `SELECT day, side, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents, earned_cents
FROM stats_daily_apps WHERE app_id = $1 AND side IN ('advertiser', 'publisher')
  AND day BETWEEN ($2 AT TIME ZONE 'UTC')::date AND ($3 AT TIME ZONE 'UTC')::date
ORDER BY day, side`, []any{appID, from, to}
	if campaignID != "" {
		query, args = `SELECT day, side, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents, earned_cents
FROM stats_daily WHERE app_id = $1 AND side IN ('advertiser', 'publisher')
  AND day BETWEEN ($2 AT TIME ZONE 'UTC')::date AND ($3 AT TIME ZONE 'UTC')::date AND campaign_id = $4
ORDER BY day, side`, append(args, campaignID)
	}
	err := t.query(ctx, query, args, func(rows pgx.Rows) error {
		var r attribution.DailyRow
		var day time.Time
		if err := rows.Scan(&day, &r.Side, &r.Fills, &r.Clicks, &r.Installs, &r.Activated, &r.Cleared, &r.Refunded, &r.Rejected,
			&r.SpendCents, &r.EarnedCents); err != nil {
			return err
		}
		r.Day = time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
		out = append(out, r)
		return nil
	})
	return out, wrap(err, "reading an app's daily stats")
}
