package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/market"
)

// The reads of the daily rollups (migrations 00032, 00037 and 00043, docs/stats.md); the
// queries are PostgreSQL's (server/postgres/rollups.go) with days as the
// microseconds of their midnight.

func (t *tx) ChainStatsDays(ctx context.Context, appID string, from, to time.Time) (attribution.ChainStats, error) {
	s := attribution.ChainStats{FraudRejected: map[string]int64{}}
	err := t.tx.QueryRowContext(ctx, `SELECT coalesce(sum(fills), 0), coalesce(sum(clicks), 0) FROM stats_daily_apps
WHERE app_id = ? AND side = 'advertiser' AND day BETWEEN ? AND ?`, appID, micros(from), micros(to)).Scan(&s.Impressions, &s.Clicks)
	if err != nil {
		return s, wrap(err)
	}
	err = t.rows(ctx, `SELECT reason, sum(chains) FROM stats_daily_rejections
WHERE app_id = ? AND day BETWEEN ? AND ? AND reason LIKE 'fraud\_%' ESCAPE '\'
GROUP BY reason HAVING sum(chains) <> 0`, []any{appID, micros(from), micros(to)}, func(rows *sql.Rows) error {
		var reason string
		var n int64
		if err := rows.Scan(&reason, &n); err != nil {
			return err
		}
		s.FraudRejected[reason] = n
		return nil
	})
	return s, err
}

func (t *tx) NetworkChainStatsDays(ctx context.Context, from, to time.Time) (attribution.NetworkStats, error) {
	s := attribution.NetworkStats{CPISum: map[string]int64{}, CPICount: map[string]int64{}}
	err := t.tx.QueryRowContext(ctx, `SELECT coalesce(sum(chains), 0), coalesce(sum(chains_fraud), 0) FROM stats_daily_network_chains
WHERE day BETWEEN ? AND ?`, micros(from), micros(to)).Scan(&s.Chains, &s.FraudRejected)
	if err != nil {
		return s, wrap(err)
	}
	err = t.rows(ctx, `SELECT category, sum(cleared_cents), sum(cleared) FROM stats_daily_categories
WHERE day BETWEEN ? AND ? GROUP BY category HAVING sum(cleared) <> 0`, []any{micros(from), micros(to)}, func(rows *sql.Rows) error {
		var cat string
		var sum, n int64
		if err := rows.Scan(&cat, &sum, &n); err != nil {
			return err
		}
		s.CPISum[cat], s.CPICount[cat] = sum, n
		return nil
	})
	return s, err
}

const holdStatsDays = `SELECT coalesce(sum(opened), 0), coalesce(sum(resolved), 0), coalesce(sum(charged), 0),
  coalesce(sum(charged_cents), 0), coalesce(sum(floored), 0), coalesce(sum(floor_cents), 0), coalesce(sum(publisher_suspended), 0)
FROM %s WHERE day BETWEEN ? AND ?`

func (t *tx) AdvertiserHoldStatsDays(ctx context.Context, appID string, from, to time.Time) (market.HoldStats, error) {
	return t.holdStats(ctx, fmt.Sprintf(holdStatsDays, "stats_daily_holds")+` AND app_id = ?`, micros(from), micros(to), appID)
}

// NetworkHoldStatsDays reads the network's rows (00043: one a day here).
func (t *tx) NetworkHoldStatsDays(ctx context.Context, from, to time.Time) (market.HoldStats, error) {
	return t.holdStats(ctx, fmt.Sprintf(holdStatsDays, "stats_daily_network_holds"), micros(from), micros(to))
}

// DailyStats reads each side on its own, as one range of the primary key
// in the key's order, and merges the two by day: with both sides in one
// query SQLite sorted the rows in a temporary B-tree (ORDER BY day, side
// across two ranges), which is what the 366-day series paid for
// (BENCHMARKS.md, "A year of history"). Without a campaign the range is of
// stats_daily_apps (migration 00037: one row a side and day, whatever the
// campaigns), with one of stats_daily (app_id, side, day, campaign_id): one
// row a day of that campaign.
func (t *tx) DailyStats(ctx context.Context, appID, campaignID string, from, to time.Time) ([]attribution.DailyRow, error) {
	query := `SELECT day, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents, earned_cents
FROM stats_daily_apps WHERE app_id = ?1 AND side = ?2 AND day BETWEEN ?3 AND ?4 AND ?5 = '' ORDER BY day`
	if campaignID != "" {
		query = `SELECT day, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents, earned_cents
FROM stats_daily WHERE app_id = ?1 AND side = ?2 AND day BETWEEN ?3 AND ?4 AND campaign_id = ?5 ORDER BY day`
	}
	var sides [2][]attribution.DailyRow
	for i, side := range []string{"advertiser", "publisher"} {
		err := t.rows(ctx, query, []any{appID, side, micros(from), micros(to), campaignID}, func(rows *sql.Rows) error {
			r := attribution.DailyRow{Side: side}
			var day int64
			if err := rows.Scan(&day, &r.Fills, &r.Clicks, &r.Installs, &r.Activated, &r.Cleared, &r.Refunded, &r.Rejected,
				&r.SpendCents, &r.EarnedCents); err != nil {
				return err
			}
			r.Day = time.UnixMicro(day).UTC()
			sides[i] = append(sides[i], r)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// By day, then side ("advertiser" before "publisher").
	adv, pub := sides[0], sides[1]
	out := make([]attribution.DailyRow, 0, len(adv)+len(pub))
	for len(adv) > 0 || len(pub) > 0 {
		if len(pub) == 0 || (len(adv) > 0 && !adv[0].Day.After(pub[0].Day)) {
			out, adv = append(out, adv[0]), adv[1:]
		} else {
			out, pub = append(out, pub[0]), pub[1:]
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// rows runs a query and calls scan for each row.
func (t *tx) rows(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return wrap(err)
		}
	}
	return wrap(rows.Err())
}
