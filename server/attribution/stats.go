package attribution

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
)

// Chain returns a chain to one of the two apps it names (publisher or
// advertiser); for anyone else it is not_found, exactly as a missing one.
func (s *Service) Chain(ctx context.Context, callerAppID, chainID string) (Chain, error) {
	var c Chain
	var found bool
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		c, found, err = tx.ChainByID(ctx, chainID)
		return err
	})
	if err != nil {
		return Chain{}, err
	}
	if !found || callerAppID == "" || (c.PublisherAppID != callerAppID && c.AdvertiserAppID != callerAppID) {
		return Chain{}, apperr.New(apperr.NotFound, "chain not found")
	}
	return c, nil
}

// AppStats aggregates an advertiser app's chains and fills in [from, to]:
// what market stats report. Fills this instance counted but has not flushed
// yet are included.
func (s *Service) AppStats(ctx context.Context, appID string, from, to time.Time) (ChainStats, error) {
	var out ChainStats
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		out, err = tx.AppChainStats(ctx, appID, from, to)
		return err
	})
	if err != nil {
		return ChainStats{}, err
	}
	out.Impressions += s.pendingFills(appID, from, to)
	if out.FraudRejected == nil {
		out.FraudRejected = map[string]int64{}
	}
	return out, nil
}

// NetworkStats aggregates the network's chains in [from, to].
func (s *Service) NetworkStats(ctx context.Context, from, to time.Time) (NetworkStats, error) {
	var out NetworkStats
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		out, err = tx.NetworkChainStats(ctx, from, to)
		return err
	})
	return out, err
}

// pendingFills is the number of fills of an advertiser's campaigns
// counted in memory, not flushed yet, on days overlapping [from, to].
func (s *Service) pendingFills(advertiserAppID string, from, to time.Time) int64 {
	match := func(k fillKey) bool {
		return k.advertiser == advertiserAppID && !k.day.Before(day(from)) && !k.day.After(to)
	}
	return s.fills.sum(match) + s.unflushed(match)
}

// roundHalfUp is n/d rounded half up, for non-negative n and positive d.
func roundHalfUp(n, d int64) int64 { return (2*n + d) / (2 * d) }

func share(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// StatsFigures is what GET /apps/{app_id}/stats takes from the chains of
// an advertiser app over [from, to]: impressions (fills of its campaigns),
// clicks and fraud_rejected by code. The market computes the rest from the
// escrow holds, which are the chains' installs.
func (s *Service) StatsFigures(ctx context.Context, appID string, from, to time.Time) (xpromo.Stats, error) {
	cs, err := s.AppStats(ctx, appID, from, to)
	if err != nil {
		return xpromo.Stats{}, err
	}
	return xpromo.Stats{Impressions: cs.Impressions, Clicks: cs.Clicks, FraudRejected: cs.FraudRejected}, nil
}

// NetworkFigures is what GET /network-stats takes from the chains over
// [from, to]: fraud_pct = chains rejected by a fraud rule / all chains and
// refused claims (a fraction from 0 to 1, like clearing_rate, which the
// market computes from the escrow holds), and avg_cpi_by_category = the
// average cleared price per category, rounded half up.
func (s *Service) NetworkFigures(ctx context.Context, from, to time.Time) (xpromo.NetworkStats, error) {
	ns, err := s.NetworkStats(ctx, from, to)
	if err != nil {
		return xpromo.NetworkStats{}, err
	}
	out := xpromo.NetworkStats{FraudPct: share(ns.FraudRejected, ns.Chains), AvgCPIByCategory: map[string]int64{}}
	for cat, sum := range ns.CPISum {
		if n := ns.CPICount[cat]; n > 0 {
			out.AvgCPIByCategory[cat] = roundHalfUp(sum, n)
		}
	}
	return out, nil
}
