package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gauges"
)

// The figures of package gauges. Each query reads a partial or range index
// (gauges_plan_internal_test.go holds them to it): payouts_pending,
// outbox_pending, webhook_deliveries_due, jobs_queued and jobs_leases,
// chains_due_activated and chains_due_installed.

const (
	pendingPayoutsQuery     = `SELECT count(*), min(created_at) FROM payouts WHERE status = 'pending'`
	undispatchedEventsQuery = `SELECT count(*), min(created_at) FROM outbox WHERE dispatched_at IS NULL`
	dueDeliveriesQuery      = `SELECT count(*), min(next_attempt_at) FROM webhook_deliveries WHERE next_attempt_at <= ?`
	runnableJobsQuery       = `SELECT kind, count(*), min(due) FROM (
  SELECT kind, run_after AS due FROM jobs WHERE status = 'queued' AND run_after <= ?
  UNION ALL
  SELECT kind, locked_until AS due FROM jobs WHERE status = 'running' AND locked_until <= ?)
GROUP BY kind`
	dueSettlementsQuery = `SELECT
  (SELECT count(*) FROM chains WHERE state = 'activated_48h'),
  (SELECT min(activated_at) FROM chains WHERE state = 'activated_48h'),
  (SELECT count(*) FROM chains WHERE state = 'installed' AND installed_at <= ?),
  (SELECT min(installed_at) FROM chains WHERE state = 'installed' AND installed_at <= ?)`
)

func (t *tx) backlog(ctx context.Context, query string, args ...any) (gauges.Backlog, error) {
	var b gauges.Backlog
	var oldest sql.NullInt64
	if err := t.tx.QueryRowContext(ctx, query, args...).Scan(&b.Count, &oldest); err != nil {
		return gauges.Backlog{}, wrap(err)
	}
	return backlogOf(b.Count, oldest), nil
}

func backlogOf(n int64, oldest sql.NullInt64) gauges.Backlog {
	if n == 0 || !oldest.Valid {
		return gauges.Backlog{}
	}
	return gauges.Backlog{Count: n, Oldest: fromMicros(oldest.Int64)}
}

func (t *tx) PendingPayouts(ctx context.Context) (gauges.Backlog, error) {
	return t.backlog(ctx, pendingPayoutsQuery)
}

func (t *tx) UndispatchedEvents(ctx context.Context) (gauges.Backlog, error) {
	return t.backlog(ctx, undispatchedEventsQuery)
}

func (t *tx) DueWebhookDeliveries(ctx context.Context, now time.Time) (gauges.Backlog, error) {
	return t.backlog(ctx, dueDeliveriesQuery, micros(now))
}

func (t *tx) RunnableJobs(ctx context.Context, now time.Time) (map[xpromo.JobKind]gauges.Backlog, error) {
	rows, err := t.tx.QueryContext(ctx, runnableJobsQuery, micros(now), micros(now))
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	out := map[xpromo.JobKind]gauges.Backlog{}
	for rows.Next() {
		var kind string
		var n int64
		var oldest sql.NullInt64
		if err := rows.Scan(&kind, &n, &oldest); err != nil {
			return nil, wrap(err)
		}
		out[xpromo.JobKind(kind)] = backlogOf(n, oldest)
	}
	return out, wrap(rows.Err())
}

func (t *tx) DueSettlements(ctx context.Context, closedBefore time.Time) (activated, expired gauges.Backlog, err error) {
	var na, ne int64
	var oa, oe sql.NullInt64
	if err := t.tx.QueryRowContext(ctx, dueSettlementsQuery, micros(closedBefore), micros(closedBefore)).Scan(&na, &oa, &ne, &oe); err != nil {
		return gauges.Backlog{}, gauges.Backlog{}, wrap(err)
	}
	return backlogOf(na, oa), backlogOf(ne, oe), nil
}
