package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/lifecycle"
)

// lifecycle.Tx on SQLite.

var _ lifecycle.Tx = (*tx)(nil)

// reviewSignals counts, for each app the review judges, its verified claims
// as publisher and those rejected for fraud since ?1 or its last
// reinstatement (r.at), whichever is later, of those its decided installs
// (activation window closed: retained, or refunded not_activated) and the
// retained ones, and its upheld complaints resolved from ?2 and after that
// reinstatement.
const signalsSQL = `WITH r AS (
  SELECT app_id, max(at) AS at FROM app_status_history WHERE from_status = 'suspended' GROUP BY app_id
)
SELECT a.id, a.status,
  (SELECT count(*) FROM chains c WHERE c.publisher_app_id = a.id AND c.nonce IS NOT NULL
     AND c.created_at >= max(?1, coalesce(r.at, 0)) AND (c.installed_at > 0 OR c.state = 'rejected')),
  (SELECT count(*) FROM chains c WHERE c.publisher_app_id = a.id AND c.nonce IS NOT NULL
     AND c.created_at >= max(?1, coalesce(r.at, 0)) AND c.state = 'rejected' AND c.reason LIKE 'fraud\_%' ESCAPE '\'),
  (SELECT count(*) FROM chains c WHERE c.publisher_app_id = a.id AND c.nonce IS NOT NULL
     AND c.created_at >= max(?1, coalesce(r.at, 0))
     AND (c.state IN ('activated_48h', 'cleared') OR (c.state = 'refunded' AND c.reason = 'not_activated'))),
  (SELECT count(*) FROM chains c WHERE c.publisher_app_id = a.id AND c.nonce IS NOT NULL
     AND c.created_at >= max(?1, coalesce(r.at, 0)) AND c.state IN ('activated_48h', 'cleared')),
  (SELECT count(*) FROM complaints k WHERE k.app_id = a.id AND k.status = 'upheld'
     AND k.resolved_at >= ?2 AND k.resolved_at > coalesce(r.at, -1))
FROM apps a LEFT JOIN r ON r.app_id = a.id
`

// reviewSignals judges the statuses the review may suspend; appSignals is
// the same counts for one app (?3), whatever its status (the thresholds
// read).
const (
	reviewSignals = signalsSQL + `WHERE a.status IN ('approved', 'throttled', 'live')
ORDER BY a.id`
	appSignals = signalsSQL + `WHERE a.id = ?3`
)

func (t *tx) ReviewSignals(ctx context.Context, since, complaintsSince time.Time) ([]lifecycle.Signals, error) {
	rows, err := t.tx.QueryContext(ctx, reviewSignals, micros(since), micros(complaintsSince))
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []lifecycle.Signals
	for rows.Next() {
		var s lifecycle.Signals
		var status string
		if err := rows.Scan(&s.AppID, &status, &s.Claims, &s.FraudRejected, &s.Decided, &s.Retained, &s.Upheld); err != nil {
			return nil, wrap(err)
		}
		s.Status = xpromo.AppStatus(status)
		out = append(out, s)
	}
	return out, wrap(rows.Err())
}

func (t *tx) AppSignals(ctx context.Context, appID string, since, complaintsSince time.Time) (lifecycle.Signals, error) {
	var s lifecycle.Signals
	var status string
	err := t.tx.QueryRowContext(ctx, appSignals, micros(since), micros(complaintsSince), appID).
		Scan(&s.AppID, &status, &s.Claims, &s.FraudRejected, &s.Decided, &s.Retained, &s.Upheld)
	if errors.Is(err, sql.ErrNoRows) {
		return lifecycle.Signals{AppID: appID}, nil
	}
	if err != nil {
		return s, wrap(err)
	}
	s.Status = xpromo.AppStatus(status)
	c, err := t.CanaryRecord(ctx, appID)
	s.CanaryClicks = c.Clicked
	return s, err
}

func (t *tx) UpheldComplaints(ctx context.Context, appID string, since time.Time) (int64, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM complaints k
WHERE k.app_id = ?1 AND k.status = 'upheld' AND k.resolved_at >= ?2
  AND k.resolved_at > coalesce((SELECT max(at) FROM app_status_history WHERE app_id = ?1 AND from_status = 'suspended'), -1)`,
		appID, micros(since)).Scan(&n)
	return n, wrap(err)
}

// suspensions is the last move to suspended of each app suspended now.
const suspensions = `SELECT h.app_id, h.reason, h.actor, h.at
FROM app_status_history h JOIN apps a ON a.id = h.app_id
WHERE a.status = 'suspended'
  AND h.seq = (SELECT max(x.seq) FROM app_status_history x WHERE x.app_id = h.app_id AND x.to_status = 'suspended')
ORDER BY h.app_id`

func (t *tx) Suspensions(ctx context.Context) ([]lifecycle.Suspension, error) {
	rows, err := t.tx.QueryContext(ctx, suspensions)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []lifecycle.Suspension
	for rows.Next() {
		var s lifecycle.Suspension
		var at int64
		if err := rows.Scan(&s.AppID, &s.Reason, &s.Actor, &at); err != nil {
			return nil, wrap(err)
		}
		s.At = fromMicros(at)
		out = append(out, s)
	}
	return out, wrap(rows.Err())
}

func (t *tx) ClawbackCandidates(ctx context.Context, publisherAppID string, since time.Time, limit int) ([]attribution.Chain, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+chainColumnsOfC+` FROM chains c
WHERE c.publisher_app_id = ? AND c.state = 'cleared' AND c.resolved_at >= ?
  AND NOT EXISTS (SELECT 1 FROM chain_clawbacks k WHERE k.chain_id = c.id)
ORDER BY c.resolved_at, c.id LIMIT ?`, publisherAppID, micros(since), limit)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []attribution.Chain
	for rows.Next() {
		c, err := scanChain(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, c)
	}
	return out, wrap(rows.Err())
}

// InsertClawback inserts unless the chain has a clawback: INSERT … SELECT
// WHERE NOT EXISTS, since the append-only guard aborts a conflicting insert
// before any ON CONFLICT clause could skip it. SQLite runs one writer at a
// time, so the check and the insert cannot interleave with another's.
func (t *tx) InsertClawback(ctx context.Context, c lifecycle.Clawback) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO chain_clawbacks (chain_id, app_id, reason, at)
SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM chain_clawbacks WHERE chain_id = ?1)`,
		c.ChainID, c.AppID, c.Reason, micros(c.At))
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}
