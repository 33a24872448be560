package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gauges"
)

// The figures of package gauges. Each query reads a partial or range index
// (gauges_plan_test.go holds them to it): payouts_pending, outbox_pending,
// webhook_deliveries_due, jobs_queued and jobs_leases, chains_due_activated
// and chains_due_installed.

const (
	pendingPayoutsQuery     = `SELECT count(*), min(created_at) FROM payouts WHERE status = 'pending'`
	undispatchedEventsQuery = `SELECT count(*), min(created_at) FROM outbox WHERE dispatched_at IS NULL`
	dueDeliveriesQuery      = `SELECT count(*), min(next_attempt_at) FROM webhook_deliveries WHERE next_attempt_at <= $1`
	runnableJobsQuery       = `SELECT kind, count(*), min(due) FROM (
  SELECT kind, run_after AS due FROM jobs WHERE status = 'queued' AND run_after <= $1
  UNION ALL
  SELECT kind, locked_until AS due FROM jobs WHERE status = 'running' AND locked_until <= $1) d
GROUP BY kind`
	dueSettlementsQuery = `SELECT
  (SELECT count(*) FROM chains WHERE state = 'activated_48h'),
  (SELECT min(activated_at) FROM chains WHERE state = 'activated_48h'),
  (SELECT count(*) FROM chains WHERE state = 'installed' AND installed_at <= $1),
  (SELECT min(installed_at) FROM chains WHERE state = 'installed' AND installed_at <= $1)`
)

func (t *tx) backlog(ctx context.Context, what, query string, args ...any) (gauges.Backlog, error) {
	var n int64
	var oldest *time.Time
	if err := t.queryRow(ctx, query, args, &n, &oldest); err != nil {
		return gauges.Backlog{}, wrap(err, what)
	}
	return backlogOf(n, oldest), nil
}

func backlogOf(n int64, oldest *time.Time) gauges.Backlog {
	if n == 0 || oldest == nil {
		return gauges.Backlog{}
	}
	return gauges.Backlog{Count: n, Oldest: oldest.UTC()}
}

func (t *tx) PendingPayouts(ctx context.Context) (gauges.Backlog, error) {
	return t.backlog(ctx, "counting pending payouts", pendingPayoutsQuery)
}

func (t *tx) UndispatchedEvents(ctx context.Context) (gauges.Backlog, error) {
	return t.backlog(ctx, "counting undispatched events", undispatchedEventsQuery)
}

func (t *tx) DueWebhookDeliveries(ctx context.Context, now time.Time) (gauges.Backlog, error) {
	return t.backlog(ctx, "counting due webhook deliveries", dueDeliveriesQuery, now)
}

func (t *tx) RunnableJobs(ctx context.Context, now time.Time) (map[xpromo.JobKind]gauges.Backlog, error) {
	out := map[xpromo.JobKind]gauges.Backlog{}
	err := t.query(ctx, runnableJobsQuery, []any{now}, func(rows pgx.Rows) error {
		var kind string
		var n int64
		var oldest *time.Time
		if err := rows.Scan(&kind, &n, &oldest); err != nil {
			return err
		}
		out[xpromo.JobKind(kind)] = backlogOf(n, oldest)
		return nil
	})
	if err != nil {
		return nil, wrap(err, "counting runnable jobs")
	}
	return out, nil
}

func (t *tx) DueSettlements(ctx context.Context, closedBefore time.Time) (activated, expired gauges.Backlog, err error) {
	var na, ne int64
	var oa, oe *time.Time
	if err := t.queryRow(ctx, dueSettlementsQuery, []any{closedBefore}, &na, &oa, &ne, &oe); err != nil {
		return gauges.Backlog{}, gauges.Backlog{}, wrap(err, "counting due settlements")
	}
	return backlogOf(na, oa), backlogOf(ne, oe), nil
}
