package lifecycle

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/market"
)

// The thresholds read (GET /v1/apps/{app_id}/thresholds): how close one
// app is to each published bar. Every state comes from the rule functions
// the review's Verdict and the market's clearing judge with, on signals
// counted by the same store queries, so what the read shows is what the
// next review or clearing decides.

// Thresholds returns the app's thresholds at now: the go-live bar (on live,
// the holds of market.LiveHoldStats) and the suspension bars (on s, counted
// from the window's start or reinstated, the app's last reinstatement, when
// later; nil when it was never reinstated).
func (r Rules) Thresholds(s Signals, live market.HoldStats, now time.Time, reinstated *time.Time) []xpromo.Threshold {
	r = r.WithDefaults()
	bar := r.LiveBar()
	liveSince := market.LiveWindowStart(now)
	fraudSince := later(now.Add(-r.FraudWindow), reinstated)
	complaintsSince := later(now.Add(-r.ComplaintsWindow), reinstated)
	liveResolved := live.Resolved - live.PublisherSuspended

	return []xpromo.Threshold{
		{
			Name: xpromo.ThresholdLiveCleared, Kind: xpromo.ThresholdKindLive, Comparison: atLeast,
			Bar: float64(bar.MinCleared), Value: float64(live.Charged),
			WindowHours: hours(time.Duration(market.LiveWindowDays) * 24 * time.Hour), Since: &liveSince,
			State: liveState(bar.ClearedReached(live)), Reason: market.ReasonGoodRetention,
		},
		{
			Name: xpromo.ThresholdLiveRetention, Kind: xpromo.ThresholdKindLive, Comparison: atLeast,
			Bar: bar.MinRetention, Value: live.Retention(), Sample: &liveResolved,
			WindowHours: hours(time.Duration(market.LiveWindowDays) * 24 * time.Hour), Since: &liveSince,
			State: liveState(bar.RetentionReached(live)), Reason: market.ReasonGoodRetention,
		},
		{
			Name: xpromo.ThresholdFraudRate, Kind: xpromo.ThresholdKindSuspension, Comparison: atLeast,
			Bar: r.FraudMaxRate, Value: ratio(s.FraudRejected, s.Claims),
			Sample: ptr(s.Claims), MinSample: ptr(r.FraudMinClaims),
			WindowHours: hours(r.FraudWindow), Since: &fraudSince,
			State: suspensionState(r.fraudRate(s)), Reason: ReasonFraudRate,
		},
		{
			Name: xpromo.ThresholdChurnRetention, Kind: xpromo.ThresholdKindSuspension, Comparison: below,
			Bar: r.ChurnMinRetention, Value: ratio(s.Retained, s.Decided),
			Sample: ptr(s.Decided), MinSample: ptr(r.ChurnMinDecided),
			WindowHours: hours(r.FraudWindow), Since: &fraudSince,
			State: suspensionState(r.churn(s)), Reason: ReasonChurn,
		},
		{
			Name: xpromo.ThresholdCanaryClicks, Kind: xpromo.ThresholdKindSuspension, Comparison: atLeast,
			Bar: float64(r.CanaryMaxClicks), Value: float64(s.CanaryClicks),
			Since: reinstated, State: suspensionState(r.canaries(s)), Reason: ReasonCanaryFailed,
		},
		{
			Name: xpromo.ThresholdUpheldComplaints, Kind: xpromo.ThresholdKindSuspension, Comparison: atLeast,
			Bar: float64(r.MaxUpheldComplaints), Value: float64(s.Upheld),
			WindowHours: hours(r.ComplaintsWindow), Since: &complaintsSince,
			State: suspensionState(r.complaints(s)), Reason: ReasonComplaints,
		},
	}
}

// Comparisons (Threshold.Comparison).
const (
	atLeast = "at_least"
	below   = "below"
)

func liveState(reached bool) xpromo.ThresholdState {
	if reached {
		return xpromo.ThresholdMet
	}
	return xpromo.ThresholdNotMet
}

func suspensionState(j judgement) xpromo.ThresholdState {
	switch j {
	case tooFew:
		return xpromo.ThresholdTooFew
	case breached:
		return xpromo.ThresholdBreached
	}
	return xpromo.ThresholdWithin
}

func ratio(n, d int64) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / float64(d)
}

func ptr(n int64) *int64 { return &n }

func hours(d time.Duration) *int64 { return ptr(int64(d / time.Hour)) }

// later is the later of t and u (t when u is nil).
func later(t time.Time, u *time.Time) time.Time {
	if u != nil && u.After(t) {
		return *u
	}
	return t
}

// Thresholds reads the app's thresholds now (GET
// /v1/apps/{app_id}/thresholds), in one snapshot: a missing app is
// apps' not-found error.
func (s *Service) Thresholds(ctx context.Context, appID string) (xpromo.Thresholds, error) {
	r := s.Rules.WithDefaults()
	now := s.now()
	var out xpromo.Thresholds
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		a, ok, err := tx.GetApp(ctx, appID, false)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		sig, err := tx.AppSignals(ctx, appID, now.Add(-r.FraudWindow), now.Add(-r.ComplaintsWindow))
		if err != nil {
			return err
		}
		live, err := market.LiveHoldStats(ctx, tx, appID, now)
		if err != nil {
			return err
		}
		history, err := tx.AppStatusHistory(ctx, appID)
		if err != nil {
			return err
		}
		out = xpromo.Thresholds{AppID: appID, Status: a.Status, AsOf: now,
			Thresholds: r.Thresholds(sig, live, now, lastReinstatement(history))}
		return nil
	})
	return out, err
}

// lastReinstatement is when the app last left suspended (the stores count
// from the same row: max(at) of its history with from_status suspended);
// nil when it never did.
func lastReinstatement(history []apps.StatusChange) *time.Time {
	var at *time.Time
	for _, h := range history {
		if h.From == xpromo.AppStatusSuspended && (at == nil || h.At.After(*at)) {
			t := h.At.UTC()
			at = &t
		}
	}
	return at
}
