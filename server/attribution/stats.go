package attribution

import (
	"context"
	"time"

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
	out.Impressions += s.fills.pending(appID, from, to)
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

// pending is the number of fills of an advertiser's campaigns counted in
// memory, not flushed yet, on days overlapping [from, to].
func (c *fillCounter) pending(advertiserAppID string, from, to time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for k, v := range c.counts {
		if k.advertiser == advertiserAppID && !k.day.Before(day(from)) && !k.day.After(to) {
			n += v
		}
	}
	return n
}
