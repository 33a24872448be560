// Package gauges reads the backlogs an operator watches, every day and
// during a failover (docs/operations.md, "Metrics to watch"): payouts not
// yet final, webhook events and deliveries waiting, runnable jobs by kind,
// and the settlements the clearing sweep has not reached. Each figure is a
// count and the time its oldest item has waited since; the store reads
// each with one index-backed query (Tx), Read turns them into Figures, and
// the /metrics collector (server/httpapi) caches them.
package gauges

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
)

// Backlog is a count of waiting items and when the one waiting longest
// became due (the zero time when Count is 0).
type Backlog struct {
	Count  int64
	Oldest time.Time
}

// Age is how long the oldest item has waited at now: 0 for an empty
// backlog, and never negative (a clock step back is not a negative wait).
func (b Backlog) Age(now time.Time) time.Duration {
	if b.Count == 0 || b.Oldest.IsZero() || !b.Oldest.Before(now) {
		return 0
	}
	return now.Sub(b.Oldest)
}

// merge is the union of two backlogs.
func merge(a, b Backlog) Backlog {
	out := Backlog{Count: a.Count + b.Count, Oldest: a.Oldest}
	if b.Count > 0 && (a.Count == 0 || b.Oldest.Before(a.Oldest)) {
		out.Oldest = b.Oldest
	}
	return out
}

// Tx is what the figures need from a (read-only) transaction: one query
// each, on a partial or range index, so a read costs the backlog's size
// and not the table's.
type Tx interface {
	// PendingPayouts counts the payouts still pending (not sent, not
	// failed); Oldest is the earliest creation time among them.
	PendingPayouts(ctx context.Context) (Backlog, error)
	// UndispatchedEvents counts the outbox events not yet fanned out into
	// webhook deliveries; Oldest is the earliest creation time.
	UndispatchedEvents(ctx context.Context) (Backlog, error)
	// DueWebhookDeliveries counts the queued deliveries due at now (their
	// next attempt time passed, a claim's lease included); Oldest is the
	// earliest next attempt time among them.
	DueWebhookDeliveries(ctx context.Context, now time.Time) (Backlog, error)
	// RunnableJobs counts, by kind, the jobs a runner could claim at now:
	// queued ones whose run_after passed, and running ones whose lease ran
	// out. Oldest is the earliest of run_after (queued) and locked_until
	// (lease ran out). Kinds with none are absent.
	RunnableJobs(ctx context.Context, now time.Time) (map[xpromo.JobKind]Backlog, error)
	// DueSettlements counts the chains the clearing sweep should have
	// settled: activated ones (Oldest: the earliest activation) and
	// installed ones installed at or before closedBefore, whose window
	// closed without activation (Oldest: the earliest install).
	DueSettlements(ctx context.Context, closedBefore time.Time) (activated, expired Backlog, err error)
}

// Figures are the backlogs at one instant, At.
type Figures struct {
	At                   time.Time
	PendingPayouts       Backlog
	UndispatchedEvents   Backlog
	DueWebhookDeliveries Backlog
	RunnableJobs         map[xpromo.JobKind]Backlog
	// DueSettlements are the chains due for the sweep, Oldest being when
	// the first became due: an activated chain at its activation, an
	// installed one when its activation window ended.
	DueSettlements Backlog
}

// JobKinds are the kinds reported even when none is runnable, so a series
// exists (at 0) from the first scrape.
var JobKinds = []xpromo.JobKind{xpromo.JobScoring, xpromo.JobGate}

// Read reads every figure at now, in one transaction of view (a snapshot:
// the figures are of one instant).
func Read(ctx context.Context, view func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error, now time.Time) (Figures, error) {
	f := Figures{At: now}
	err := view(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if f.PendingPayouts, err = tx.PendingPayouts(ctx); err != nil {
			return err
		}
		if f.UndispatchedEvents, err = tx.UndispatchedEvents(ctx); err != nil {
			return err
		}
		if f.DueWebhookDeliveries, err = tx.DueWebhookDeliveries(ctx, now); err != nil {
			return err
		}
		if f.RunnableJobs, err = tx.RunnableJobs(ctx, now); err != nil {
			return err
		}
		activated, expired, err := tx.DueSettlements(ctx, now.Add(-attribution.ActivationWindowEnd))
		if err != nil {
			return err
		}
		// An expired install became due when its window ended.
		if expired.Count > 0 {
			expired.Oldest = expired.Oldest.Add(attribution.ActivationWindowEnd)
		}
		f.DueSettlements = merge(activated, expired)
		return nil
	})
	if err != nil {
		return Figures{}, err
	}
	return f, nil
}
