package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/lifecycle"
)

// lifecycle.Tx on PostgreSQL.

var _ lifecycle.Tx = (*tx)(nil)

// reviewSignals counts, for each app the review judges, its verified claims
// as publisher and those rejected for fraud since $1 or its last
// reinstatement (r.at; greatest ignores a NULL), of those its decided
// installs (activation window closed: retained, or refunded not_activated)
// and the retained ones, and its upheld complaints resolved from $2 and
// after that reinstatement.
const signalsSQL = `WITH r AS (
  SELECT app_id, max(at) AS at FROM app_status_history WHERE from_status = 'suspended' GROUP BY app_id
)
SELECT a.id, a.status,
  (SELECT count(*) FROM chains c WHERE c.publisher_app_id = a.id AND c.nonce IS NOT NULL
     AND c.created_at >= greatest($1::timestamptz, r.at) AND (c.installed_at IS NOT NULL OR c.state = 'rejected')),
  (SELECT count(*) FROM chains c WHERE c.publisher_app_id = a.id AND c.nonce IS NOT NULL
     AND c.created_at >= greatest($1::timestamptz, r.at) AND c.state = 'rejected' AND c.reason LIKE 'fraud\_%'),
  (SELECT count(*) FROM chains c WHERE c.publisher_app_id = a.id AND c.nonce IS NOT NULL
     AND c.created_at >= greatest($1::timestamptz, r.at)
     AND (c.state IN ('activated_48h', 'cleared') OR (c.state = 'refunded' AND c.reason = 'not_activated'))),
  (SELECT count(*) FROM chains c WHERE c.publisher_app_id = a.id AND c.nonce IS NOT NULL
     AND c.created_at >= greatest($1::timestamptz, r.at) AND c.state IN ('activated_48h', 'cleared')),
  (SELECT count(*) FROM complaints k WHERE k.app_id = a.id AND k.status = 'upheld'
     AND k.resolved_at >= $2 AND (r.at IS NULL OR k.resolved_at > r.at))
FROM apps a LEFT JOIN r ON r.app_id = a.id
`

// reviewSignals judges the statuses the review may suspend; appSignals is
// the same counts for one app ($3), whatever its status (the thresholds
// read).
const (
	reviewSignals = signalsSQL + `WHERE a.status IN ('approved', 'throttled', 'live')
ORDER BY a.id`
	appSignals = signalsSQL + `WHERE a.id = $3`
)

func (t *tx) ReviewSignals(ctx context.Context, since, complaintsSince time.Time) ([]lifecycle.Signals, error) {
	var out []lifecycle.Signals
	err := t.query(ctx, reviewSignals, []any{since, complaintsSince}, func(rows pgx.Rows) error {
		var s lifecycle.Signals
		var status string
		if err := rows.Scan(&s.AppID, &status, &s.Claims, &s.FraudRejected, &s.Decided, &s.Retained, &s.Upheld); err != nil {
			return err
		}
		s.Status = xpromo.AppStatus(status)
		out = append(out, s)
		return nil
	})
	return out, wrap(err, "reading the lifecycle review's signals")
}

func (t *tx) AppSignals(ctx context.Context, appID string, since, complaintsSince time.Time) (lifecycle.Signals, error) {
	s := lifecycle.Signals{AppID: appID}
	found := false
	err := t.query(ctx, appSignals, []any{since, complaintsSince, appID}, func(rows pgx.Rows) error {
		var status string
		found = true
		if err := rows.Scan(&s.AppID, &status, &s.Claims, &s.FraudRejected, &s.Decided, &s.Retained, &s.Upheld); err != nil {
			return err
		}
		s.Status = xpromo.AppStatus(status)
		return nil
	})
	if err != nil || !found {
		return s, wrap(err, "reading an app's lifecycle signals")
	}
	c, err := t.CanaryRecord(ctx, appID)
	s.CanaryClicks = c.Clicked
	return s, err
}

func (t *tx) UpheldComplaints(ctx context.Context, appID string, since time.Time) (int64, error) {
	var n int64
	err := t.queryRow(ctx, `SELECT count(*) FROM complaints k
WHERE k.app_id = $1 AND k.status = 'upheld' AND k.resolved_at >= $2
  AND k.resolved_at > coalesce((SELECT max(at) FROM app_status_history WHERE app_id = $1 AND from_status = 'suspended'), '-infinity')`,
		[]any{appID, since}, &n)
	return n, wrap(err, "counting an app's upheld complaints")
}

// suspensions is the last move to suspended of each app suspended now.
const suspensions = `SELECT h.app_id, h.reason, h.actor, h.at
FROM app_status_history h JOIN apps a ON a.id = h.app_id
WHERE a.status = 'suspended'
  AND h.seq = (SELECT max(x.seq) FROM app_status_history x WHERE x.app_id = h.app_id AND x.to_status = 'suspended')
ORDER BY h.app_id`

func (t *tx) Suspensions(ctx context.Context) ([]lifecycle.Suspension, error) {
	var out []lifecycle.Suspension
	err := t.query(ctx, suspensions, nil, func(rows pgx.Rows) error {
		var s lifecycle.Suspension
		if err := rows.Scan(&s.AppID, &s.Reason, &s.Actor, &s.At); err != nil {
			return err
		}
		s.At = s.At.UTC()
		out = append(out, s)
		return nil
	})
	return out, wrap(err, "reading suspensions")
}

func (t *tx) ClawbackCandidates(ctx context.Context, publisherAppID string, since time.Time, limit int) ([]attribution.Chain, error) {
	var out []attribution.Chain
	err := t.query(ctx, `SELECT `+chainColumnsOfC+` FROM chains c
WHERE c.publisher_app_id = $1 AND c.state = 'cleared' AND c.resolved_at >= $2
  AND NOT EXISTS (SELECT 1 FROM chain_clawbacks k WHERE k.chain_id = c.id)
ORDER BY c.resolved_at, c.id LIMIT $3`, []any{publisherAppID, since, limit}, func(rows pgx.Rows) error {
		c, err := scanChain(rows)
		if err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, wrap(err, "reading chains to claw back")
}

// InsertClawback inserts unless the chain has a clawback. ON CONFLICT DO
// NOTHING waits for a concurrent insert of the same chain and, once that one
// commits, does nothing: of two reviewers exactly one claws a chain back.
func (t *tx) InsertClawback(ctx context.Context, c lifecycle.Clawback) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO chain_clawbacks (chain_id, app_id, reason, at) VALUES ($1, $2, $3, $4)
ON CONFLICT (chain_id) DO NOTHING`, c.ChainID, c.AppID, c.Reason, c.At)
	return n == 1, wrap(err, "recording a clawback")
}
