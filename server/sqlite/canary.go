package sqlite

import (
	"context"

	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/scoring"
)

// The canary check's tables (docs/apps.md "Canary check") on SQLite.

func (t *tx) AddCanaryCounts(ctx context.Context, counts []attribution.CanaryCount) error {
	stmt, err := t.tx.PrepareContext(ctx, `INSERT INTO canary_counts (day, app_id, count) VALUES (?, ?, ?)
ON CONFLICT (app_id, day) DO UPDATE SET count = count + excluded.count`)
	if err != nil {
		return wrap(err)
	}
	defer stmt.Close()
	for _, c := range counts {
		if _, err := stmt.ExecContext(ctx, micros(dayStart(c.Day)), c.AppID, c.Count); err != nil {
			return wrap(err)
		}
	}
	return nil
}

// InsertCanaryClick inserts unless the jti has a record: INSERT … SELECT
// WHERE NOT EXISTS (the table is append-only; SQLite runs one writer at a
// time, so the check and the insert cannot interleave with another's).
func (t *tx) InsertCanaryClick(ctx context.Context, c attribution.CanaryClick) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO canary_clicks (jti, app_id, via, at)
SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM canary_clicks WHERE jti = ?1)`,
		c.Nonce, c.AppID, c.Via, micros(c.At))
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

// lastReinstated is each app's last reinstatement (its last move out of
// suspended), in microseconds.
const lastReinstated = `SELECT app_id, max(at) AS at FROM app_status_history WHERE from_status = 'suspended' GROUP BY app_id`

// canaryRecordSQL counts an app's canaries served (on the UTC days from
// its last reinstatement's on) and clicked (since that reinstatement).
const canaryRecordSQL = `WITH r AS (` + lastReinstated + `)
SELECT
  (SELECT coalesce(sum(n.count), 0) FROM canary_counts n WHERE n.app_id = ?1
     AND n.day >= coalesce((SELECT at - at % 86400000000 FROM r WHERE r.app_id = ?1), 0)),
  (SELECT count(*) FROM canary_clicks k WHERE k.app_id = ?1
     AND k.at >= coalesce((SELECT at FROM r WHERE r.app_id = ?1), 0))`

func (t *tx) CanaryRecord(ctx context.Context, appID string) (scoring.Canaries, error) {
	var c scoring.Canaries
	err := t.tx.QueryRowContext(ctx, canaryRecordSQL, appID).Scan(&c.Served, &c.Clicked)
	return c, wrap(err)
}

// canaryClicksSQL counts, for each app with any, its canary clicks since
// its last reinstatement.
const canaryClicksSQL = `WITH r AS (` + lastReinstated + `)
SELECT k.app_id, count(*) FROM canary_clicks k LEFT JOIN r ON r.app_id = k.app_id
WHERE k.at >= coalesce(r.at, 0)
GROUP BY k.app_id ORDER BY k.app_id`

func (t *tx) CanaryClicks(ctx context.Context) (map[string]int64, error) {
	rows, err := t.tx.QueryContext(ctx, canaryClicksSQL)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var app string
		var n int64
		if err := rows.Scan(&app, &n); err != nil {
			return nil, wrap(err)
		}
		out[app] = n
	}
	return out, wrap(rows.Err())
}
