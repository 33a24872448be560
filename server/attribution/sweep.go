package attribution

import (
	"context"
	"slices"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/txunit"
)

// DefaultSweepBatch is how many chains one sweep transaction settles.
const DefaultSweepBatch = 500

// SweepResult counts what a sweep settled.
type SweepResult struct {
	Cleared  int
	Refunded int
	// Failed counts chains whose settlement the ledger refused (logged;
	// they stay due and are tried again by the next sweep).
	Failed int
}

// Sweep settles every chain due now, batch after batch, until none is left:
// activated_48h chains clear (ledger.Clear: the advertiser's hold is
// released and charged, the publisher earns in its earn mode, the platform
// keeps the take) — unless their publisher is suspended for fraud, then
// they are refunded (ledger.EscrowRelease, reason publisher_suspended) —
// and installed chains whose 72-hour window closed without a heartbeat are
// refunded (ledger.EscrowRelease, reason not_activated). Each batch is one
// transaction holding the chains' state changes, their ledger lines and
// their outbox events; on PostgreSQL the batch is claimed with FOR UPDATE
// SKIP LOCKED, so several servers sweep at once without overlapping. Tests
// call it directly; the server runs it in a loop (RunSweeper in package
// wire).
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	var total SweepResult
	batch := s.SweepBatch
	if batch <= 0 {
		batch = DefaultSweepBatch
	}
	for {
		r, n, err := s.sweepBatch(ctx, batch)
		total.Cleared += r.Cleared
		total.Refunded += r.Refunded
		total.Failed += r.Failed
		if err != nil {
			return total, err
		}
		// A short batch means nothing more is due (or the rest is being
		// settled by another sweeper right now). Failed chains stay due:
		// stop rather than spin on them.
		if n < batch || r.Failed > 0 {
			return total, nil
		}
	}
}

// sweepBatch settles up to limit due chains in one transaction and returns
// how many it claimed.
func (s *Service) sweepBatch(ctx context.Context, limit int) (SweepResult, int, error) {
	now := s.now()
	var res SweepResult
	var claimed int
	var refunds []Chain
	var advertisers []string
	var changed bool
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		res, claimed, refunds, advertisers, changed = SweepResult{}, 0, nil, nil, false
		due, err := tx.DueChains(ctx, now.Add(-ActivationWindowEnd), limit)
		if err != nil {
			return err
		}
		claimed = len(due)
		if claimed == 0 {
			return nil
		}
		ops := make([]ledger.Operation, len(due))
		for i, d := range due {
			if d.State == StateActivated && !refundActivated(d) {
				mode := d.PublisherEarnMode
				if mode == "" {
					mode = ledger.EarnCash
				}
				ops[i], err = ledger.Clear(clearKey(d.ID), d.hold(), mode)
			} else {
				ops[i], err = ledger.EscrowRelease(releaseKey(d.ID), d.hold())
			}
			if err != nil {
				return err
			}
		}
		_, errs, err := ledger.Apply(ctx, tx, now, ops)
		if err != nil {
			return err
		}
		settled := make([]Chain, 0, len(due))
		var evs []outbox.Event
		for i, d := range due {
			if errs[i] != nil {
				res.Failed++
				s.log().Error("settling a chain failed; it stays due", "chain_id", d.ID, "state", d.State, "error", errs[i].Error())
				continue
			}
			c, prev := d.Chain, d.State
			switch {
			case prev == StateActivated && refundActivated(d):
				c.State, c.Reason = StateRefunded, ReasonPublisherSuspended
				res.Refunded++
				refunds = append(refunds, c)
			case prev == StateActivated:
				c.State = StateCleared
				res.Cleared++
			default:
				c.State, c.Reason = StateRefunded, ReasonNotActivated
				res.Refunded++
				refunds = append(refunds, c)
			}
			// The go-live rule changes nothing for apps already live (or
			// suspended): skip its queries for them.
			trading := d.AdvertiserStatus == xpromo.AppStatusApproved || d.AdvertiserStatus == xpromo.AppStatusThrottled
			if c.State == StateCleared && trading && !slices.Contains(advertisers, c.AdvertiserAppID) {
				advertisers = append(advertisers, c.AdvertiserAppID)
			}
			c.ResolvedAt, c.UpdatedAt = now, now
			settled = append(settled, c)
			evs = append(evs, stateEvents(c, prev, now)...)
		}
		if len(settled) == 0 {
			return nil
		}
		slices.Sort(advertisers)
		if err := tx.SettleChains(ctx, settled); err != nil {
			return err
		}
		if err := tx.InsertOutbox(ctx, evs); err != nil {
			return err
		}
		// The go-live rule, once per advertiser that cleared, in id order
		// (app rows are locked after the accounts, as claims do).
		for _, adv := range advertisers {
			moved, err := s.Auction.RecordClearing(ctx, tx, adv)
			if err != nil {
				return err
			}
			changed = changed || moved
		}
		return nil
	})
	if err != nil {
		return SweepResult{}, 0, err
	}
	txunit.AfterCommit(ctx, func() {
		for _, c := range refunds {
			s.Auction.Spent(c.CampaignID, c.AdvertiserAppID, -c.PriceCents, c.InstalledAt)
		}
		if changed {
			s.Auction.Invalidate()
		}
	})
	return res, claimed, nil
}

// refundActivated reports whether an activated chain is refunded rather
// than cleared: its publisher is suspended for fraud, so paying it would
// only be clawed back by the next lifecycle review.
func refundActivated(d Due) bool { return apps.SuspendedForFraud(d.PublisherSuspension) }

// SpendToday returns, per campaign, the prices of its chains installed on
// the UTC day starting dayStart and not refunded or rejected: today's holds
// and charges. Delivery (market.Service.SpendToday) loads it at start and at
// each day boundary. It reads the kept daily figure (Tx.DaySpend), not the
// day's chains: on a year of history the sum over chains took 420-740 ms
// with claims waiting behind it (BENCHMARKS.md, "A year at full scale").
func (s *Service) SpendToday(ctx context.Context, dayStart time.Time) (map[string]int64, error) {
	var out map[string]int64
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		out, err = tx.DaySpend(ctx, dayStart)
		return err
	})
	return out, err
}
