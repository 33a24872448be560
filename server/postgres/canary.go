package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/scoring"
)

// The canary check's tables (docs/apps.md "Canary check") on PostgreSQL.

func (t *tx) AddCanaryCounts(ctx context.Context, counts []attribution.CanaryCount) error {
	n := len(counts)
	if n == 0 {
		return nil
	}
	day, app, count := make([]time.Time, n), make([]string, n), make([]int64, n)
	for i, c := range counts {
		day[i], app[i], count[i] = c.Day, c.AppID, c.Count
	}
	_, err := t.exec(ctx, `INSERT INTO canary_counts (day, app_id, count)
SELECT (d AT TIME ZONE 'UTC')::date, a, n FROM unnest($1::timestamptz[], $2::text[], $3::bigint[]) AS v(d, a, n)
ON CONFLICT (app_id, day) DO UPDATE SET count = canary_counts.count + excluded.count`, day, app, count)
	return wrap(err, "adding canary counts")
}

// InsertCanaryClick inserts unless the jti has a record. ON CONFLICT DO
// NOTHING waits for a concurrent insert of the same jti and then skips.
func (t *tx) InsertCanaryClick(ctx context.Context, c attribution.CanaryClick) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO canary_clicks (jti, app_id, via, at) VALUES ($1, $2, $3, $4) ON CONFLICT (jti) DO NOTHING`,
		c.Nonce, c.AppID, c.Via, c.At)
	return n == 1, wrap(err, "recording a canary click")
}

// lastReinstated is each app's last reinstatement (its last move out of
// suspended).
const lastReinstated = `SELECT app_id, max(at) AS at FROM app_status_history WHERE from_status = 'suspended' GROUP BY app_id`

// canaryRecordSQL counts an app's canaries served (on the UTC days from
// its last reinstatement's on) and clicked (since that reinstatement).
const canaryRecordSQL = `WITH r AS (` + lastReinstated + `)
SELECT
  (SELECT coalesce(sum(n.count), 0)::bigint FROM canary_counts n WHERE n.app_id = $1
     AND (NOT EXISTS (SELECT 1 FROM r WHERE r.app_id = $1) OR n.day >= (SELECT (r.at AT TIME ZONE 'UTC')::date FROM r WHERE r.app_id = $1))),
  (SELECT count(*) FROM canary_clicks k WHERE k.app_id = $1
     AND (NOT EXISTS (SELECT 1 FROM r WHERE r.app_id = $1) OR k.at >= (SELECT r.at FROM r WHERE r.app_id = $1)))`

func (t *tx) CanaryRecord(ctx context.Context, appID string) (scoring.Canaries, error) {
	var c scoring.Canaries
	err := t.queryRow(ctx, canaryRecordSQL, []any{appID}, &c.Served, &c.Clicked)
	return c, wrap(err, "counting an app's canaries")
}

// canaryClicksSQL counts, for each app with any, its canary clicks since
// its last reinstatement.
const canaryClicksSQL = `WITH r AS (` + lastReinstated + `)
SELECT k.app_id, count(*) FROM canary_clicks k LEFT JOIN r ON r.app_id = k.app_id
WHERE r.at IS NULL OR k.at >= r.at
GROUP BY k.app_id ORDER BY k.app_id`

func (t *tx) CanaryClicks(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := t.query(ctx, canaryClicksSQL, nil, func(rows pgx.Rows) error {
		var app string
		var n int64
		if err := rows.Scan(&app, &n); err != nil {
			return err
		}
		out[app] = n
		return nil
	})
	return out, wrap(err, "counting canary clicks")
}
