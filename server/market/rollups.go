package market

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/server/rollup"
)

// Add is the sum of two sets of holds' aggregates.
func (h HoldStats) Add(o HoldStats) HoldStats {
	return HoldStats{Opened: h.Opened + o.Opened, Resolved: h.Resolved + o.Resolved, Charged: h.Charged + o.Charged,
		ChargedAmount: h.ChargedAmount + o.ChargedAmount, FlooredCharged: h.FlooredCharged + o.FlooredCharged,
		ChargedFloors: h.ChargedFloors + o.ChargedFloors, PublisherSuspended: h.PublisherSuspended + o.PublisherSuspended}
}

// holdStats aggregates the holds opened in [from, to] for appID ("" for the
// whole network): the part of from's day, when the window starts inside
// one, from the holds themselves, the whole days from the daily rollups
// (package rollup), so the read does not grow with the history.
func holdStats(ctx context.Context, tx HoldReader, appID string, from, to time.Time) (HoldStats, error) {
	w := rollup.Split(from, to)
	var raw, days HoldStats
	var err error
	switch {
	case !w.HasRaw:
	case appID == "":
		raw, err = tx.NetworkHoldStats(ctx, w.From, w.RawTo)
	default:
		raw, err = tx.AdvertiserHoldStats(ctx, appID, w.From, w.RawTo)
	}
	if err != nil || !w.HasDays {
		return raw, err
	}
	if appID == "" {
		days, err = tx.NetworkHoldStatsDays(ctx, w.FirstDay, w.LastDay)
	} else {
		days, err = tx.AdvertiserHoldStatsDays(ctx, appID, w.FirstDay, w.LastDay)
	}
	return raw.Add(days), err
}
