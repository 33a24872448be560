package market

import (
	"context"
	"errors"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
)

// Trading: the app status rules of the market (decisions §6,
// docs/apps.md). An approved app moves to throttled on its first trade and
// to live once the installs it bought clear with good retention; the moves
// go through the apps domain's Transition, inside the transaction of the
// trade or clearing that causes them, so the status and its history row
// commit with it.

// The go-live thresholds.
const (
	DefaultLiveMinCleared   = 10
	DefaultLiveMinRetention = 0.4
)

// LiveWindowDays is the window the go-live rule looks at: the escrow holds
// opened for the app in the last 30 days (those of Stats for last_30_days).
const LiveWindowDays = 30

// Reasons of the status changes made by the market (app_status_history,
// actor "market").
const (
	ReasonFirstTrade    = "first_trade"
	ReasonGoodRetention = "cleared_with_good_retention"
)

// TradeTx is the transaction of an install claim or a clearing, as the
// trading rules need it (storage.Tx is one).
type TradeTx interface {
	Tx
	apps.Tx
}

var errNoApps = errors.New("market: Service.Apps is not set; the trading rules change app statuses through it")

// RecordTrade applies the first-trade rule inside the transaction that
// opens an escrow hold (an install claim): the advertiser and the publisher,
// whichever of them is still approved, move to throttled (reason
// first_trade). It reports whether a status changed; after the commit, call
// Invalidate so delivery sees it at once.
func (s *Service) RecordTrade(ctx context.Context, tx TradeTx, advertiserAppID, publisherAppID string) (changed bool, err error) {
	if s.Apps == nil {
		return false, errNoApps
	}
	for _, id := range []string{advertiserAppID, publisherAppID} {
		moved, err := s.firstTrade(ctx, tx, id)
		if err != nil {
			return changed, err
		}
		changed = changed || moved
	}
	return changed, nil
}

// firstTrade moves an approved app to throttled.
func (s *Service) firstTrade(ctx context.Context, tx TradeTx, appID string) (bool, error) {
	a, ok, err := tx.GetApp(ctx, appID, true)
	if err != nil || !ok || a.Status != xpromo.AppStatusApproved {
		return false, err
	}
	_, err = s.Apps.Transition(ctx, tx, appID, xpromo.AppStatusThrottled, ReasonFirstTrade, apps.ActorMarket)
	return err == nil, err
}

// RecordClearing applies the go-live rule inside the transaction that
// clears an install (after the clearing's ledger operation, so its charge
// counts): a throttled advertiser (an approved one first moves to throttled:
// it has traded) whose escrow holds opened in the last LiveWindowDays count
// at least LiveMinCleared charged and a 48-hour retention
// (HoldStats.Retention: charged / resolved, the holds refunded because their
// publisher was suspended for fraud left out) of at least LiveMinRetention
// moves to live (reason
// cleared_with_good_retention), and its campaigns' statuses are recorded
// again (active when funded, Status). It reports whether anything changed;
// after the commit, call Invalidate so delivery sees it at once.
func (s *Service) RecordClearing(ctx context.Context, tx TradeTx, advertiserAppID string) (changed bool, err error) {
	if s.Apps == nil {
		return false, errNoApps
	}
	if changed, err = s.firstTrade(ctx, tx, advertiserAppID); err != nil {
		return changed, err
	}
	a, ok, err := tx.GetApp(ctx, advertiserAppID, true)
	if err != nil || !ok || a.Status != xpromo.AppStatusThrottled {
		return changed, err
	}
	now := s.Now().UTC()
	hs, err := LiveHoldStats(ctx, tx, advertiserAppID, now)
	if err != nil {
		return changed, err
	}
	if !s.goesLive(hs) {
		return changed, nil
	}
	if _, err := s.Apps.Transition(ctx, tx, advertiserAppID, xpromo.AppStatusLive, ReasonGoodRetention, apps.ActorMarket); err != nil {
		return changed, err
	}
	campaigns, err := tx.AppCampaigns(ctx, advertiserAppID)
	if err != nil {
		return true, err
	}
	for _, c := range campaigns {
		if _, err := syncStatus(ctx, tx, c, now); err != nil {
			return true, err
		}
	}
	return true, nil
}

// LiveBar is the go-live rule's thresholds (docs/apps.md "Lifecycle"): a
// throttled advertiser goes live when the escrow holds opened for it in the
// last LiveWindowDays count at least MinCleared charged and a 48-hour
// retention (HoldStats.Retention) of at least MinRetention. Zero fields
// mean DefaultLiveMinCleared and DefaultLiveMinRetention.
type LiveBar struct {
	MinCleared   int64
	MinRetention float64
}

// WithDefaults returns b with its zero (or negative) fields set to the
// defaults.
func (b LiveBar) WithDefaults() LiveBar {
	if b.MinCleared <= 0 {
		b.MinCleared = DefaultLiveMinCleared
	}
	if b.MinRetention <= 0 {
		b.MinRetention = DefaultLiveMinRetention
	}
	return b
}

// ClearedReached and RetentionReached are the two halves of the go-live
// rule; Reached is both. The clearing (RecordClearing) and the lifecycle's
// thresholds read (lifecycle.Rules.Thresholds) both judge through them.
func (b LiveBar) ClearedReached(hs HoldStats) bool { return hs.Charged >= b.WithDefaults().MinCleared }

// RetentionReached: see ClearedReached.
func (b LiveBar) RetentionReached(hs HoldStats) bool {
	return hs.Retention() >= b.WithDefaults().MinRetention
}

// Reached reports whether the holds reach the go-live bar.
func (b LiveBar) Reached(hs HoldStats) bool { return b.ClearedReached(hs) && b.RetentionReached(hs) }

// LiveHoldStats aggregates the escrow holds the go-live rule judges the
// advertiser on at now: those opened for it in the last LiveWindowDays.
func LiveHoldStats(ctx context.Context, tx HoldReader, advertiserAppID string, now time.Time) (HoldStats, error) {
	now = now.UTC()
	return holdStats(ctx, tx, advertiserAppID, LiveWindowStart(now), now)
}

// LiveWindowStart is where the go-live rule's window begins at now.
func LiveWindowStart(now time.Time) time.Time { return now.UTC().AddDate(0, 0, -LiveWindowDays) }

// goesLive is the go-live rule on an advertiser's holds of the window.
func (s *Service) goesLive(hs HoldStats) bool {
	return LiveBar{MinCleared: s.LiveMinCleared, MinRetention: s.LiveMinRetention}.Reached(hs)
}
