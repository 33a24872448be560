// Package retention deletes what the server keeps only for a while, in
// bounded batches, and never anything that is kept for good.
//
// Kept for a while (docs/operations.md, "Retention"):
//   - fill counts by day (fill_counts): FillCountsKept, 400 days. Nothing
//     reads them past the longest window a person asks for (GET
//     /v1/stats/daily: 366 days); the figures come from the daily rollups
//     (stats_daily), which a purge does not touch.
//
// Purged elsewhere, on their own schedules: events and webhook attempts
// after 30 days (webhooks.Service.Purge), expired Idempotency-Keys
// (idempotency.Service.Purge), fill flush ids after 48 hours (with each
// flush).
//
// Kept forever, never touched here: ledger operations, lines, holds and
// resolutions (append-only), chains (the evidence of every install and of
// the money it moved), the daily rollups, canary counts (read since an
// app's last reinstatement), audit entries.
package retention

import (
	"context"
	"log/slog"
	"time"
)

// FillCountsKept is how long fill counts by day are kept: past the 366
// days of GET /v1/stats/daily, with a margin.
const FillCountsKept = 400 * 24 * time.Hour

// Batch bounds each purge transaction, so that a backlog (the first run on a
// store of several years) never holds a write lock for long: the SQLite
// writer and the PostgreSQL rows are free again after each batch.
const Batch = 5000

// DefaultInterval is how often Run purges.
const DefaultInterval = time.Hour

// Tx is what the purge needs from a transaction.
type Tx interface {
	// PurgeFillCounts deletes up to limit fill count rows of days before
	// beforeDay (a UTC midnight) and returns how many it deleted.
	PurgeFillCounts(ctx context.Context, beforeDay time.Time, limit int) (int, error)
}

// Service purges. Update and Now are required.
type Service struct {
	Update func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	Now    func() time.Time
}

// Report is what one purge deleted.
type Report struct {
	FillCounts int
}

// FillCountsCutoff is the first day whose fill counts are kept at now: the
// UTC midnight FillCountsKept before now's day.
func FillCountsCutoff(now time.Time) time.Time {
	return now.UTC().Truncate(24 * time.Hour).Add(-FillCountsKept)
}

// Purge deletes, batch after batch (Batch rows a transaction), what is past
// its retention, until nothing is left or ctx ends.
func (s *Service) Purge(ctx context.Context) (Report, error) {
	var rep Report
	cutoff := FillCountsCutoff(s.Now())
	for {
		var n int
		err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
			var err error
			n, err = tx.PurgeFillCounts(ctx, cutoff, Batch)
			return err
		})
		rep.FillCounts += n
		if err != nil || n < Batch {
			return rep, err
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}
}

// Run purges now and then every interval (DefaultInterval if 0) until ctx
// ends. Failures are logged and retried at the next tick; several server
// instances may run it at once (each batch deletes rows that are gone for
// the others).
func (s *Service) Run(ctx context.Context, interval time.Duration, logger *slog.Logger) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		rep, err := s.Purge(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("retention purge", slog.Int("fill_counts_deleted", rep.FillCounts), slog.String("error", err.Error()))
		case rep.FillCounts > 0:
			logger.Info("retention purge", slog.Int("fill_counts_deleted", rep.FillCounts))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
