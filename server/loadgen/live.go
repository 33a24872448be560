package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// An approved advertiser's delivery is capped at EUR 50 of installs a day
// until it goes live: 10 installs cleared with a 48-hour retention of at
// least 0.4 (docs/marketplace.md). Fills stop well before a claim load
// test ends under that cap, so Setup takes every advertiser live the way
// the network does: installs played through to clearing.
const (
	liveInstalls = 12 // per advertiser; 10 must clear
	liveRounds   = 4
	// activationDelay puts the heartbeat inside its window, 48 to 72 hours
	// after the install.
	activationDelay = 49 * time.Hour
)

// goLive plays installs of every advertiser to clearing until all are live.
func goLive(ctx context.Context, op *xpromo.Client, f *Fixture, forwardedFor bool) error {
	// The warm-up fills the slots of the claim scenario's publishers: the
	// fill scenario's budget stays whole, and the warm-up's few hundred
	// fills leave the claim scenario most of its own.
	g := &generator{op: op, f: f, cfg: RunConfig{Scenario: ScenarioClaim, Concurrency: 1, ForwardedFor: forwardedFor}}
	var rounds []string // what each round did, for the error
	var pending map[string]bool
	for range liveRounds {
		pending = map[string]bool{}
		for id := range f.Advertisers {
			a, err := op.AdminGetApp(ctx, id)
			if err != nil {
				return fmt.Errorf("reading advertiser %s: %w", id, err)
			}
			if a.Status != xpromo.AppStatusLive {
				pending[id] = true
			}
		}
		if len(pending) == 0 {
			return nil
		}
		// Clicks until each pending advertiser has enough; a fill may go
		// to any campaign, so bound the attempts.
		got := map[string]int{}
		var clicks []click
		for tries := 0; tries < 20*liveInstalls*len(f.Advertisers); tries++ {
			done := true
			for id := range pending {
				done = done && got[id] >= liveInstalls
			}
			if done {
				break
			}
			c, err := g.click(ctx)
			var nf *noFillError
			if errors.As(err, &nf) {
				break // every pending campaign is capped for today
			}
			if err != nil {
				return err
			}
			got[c.adv.ID]++
			clicks = append(clicks, c)
		}
		if err := g.advance(ctx, installDelay); err != nil {
			return err
		}
		var installed []click
		refused := map[string]int{}
		for _, c := range clicks {
			_, req := g.claim(ctx, c)
			if err := req(); err != nil {
				if xpromo.IsCode(err, "insufficient_funds") || xpromo.IsCode(err, "budget_exhausted") {
					refused[xpromo.ErrorCode(err)]++
					continue
				}
				return fmt.Errorf("claiming a warm-up install: %w", err)
			}
			installed = append(installed, c)
		}
		if err := g.advance(ctx, activationDelay); err != nil {
			return err
		}
		for _, c := range installed {
			hb, err := attribution.SignHeartbeat(c.adv.Key.Private, c.adv.Key.ID, attribution.HeartbeatClaims{
				AppID: c.adv.ID, DeviceID: c.device, TokenHash: attribution.TokenHashString(c.token), Seq: 1, SentAt: f.clock.Now().Unix(),
			})
			if err != nil {
				return err
			}
			if _, err := op.SDKHeartbeat(ctx, &xpromo.HeartbeatRequest{Heartbeat: hb}, g.addrOpts(c)...); err != nil {
				return fmt.Errorf("warm-up heartbeat: %w", err)
			}
		}
		sw, err := op.AdminSweep(ctx)
		if err != nil {
			return fmt.Errorf("clearing sweep: %w", err)
		}
		rounds = append(rounds, fmt.Sprintf("%d pending: %d clicks, %d installed, refused %v, sweep %+v",
			len(pending), len(clicks), len(installed), refused, *sw))
	}
	// Why not: each advertiser still short of the bar, by its thresholds.
	var short []string
	for id := range pending {
		th, err := f.Advertisers[id].Client.GetThresholds(ctx, id)
		if err != nil {
			short = append(short, fmt.Sprintf("%s: reading its thresholds: %v", id, err))
			continue
		}
		var live []string
		for _, x := range th.Thresholds {
			if x.Kind == xpromo.ThresholdKindLive {
				live = append(live, fmt.Sprintf("%s %g of %g (%s)", x.Name, x.Value, x.Bar, x.State))
			}
		}
		short = append(short, fmt.Sprintf("%s %s at %s: %s", id, th.Status, th.AsOf.Format(time.RFC3339), strings.Join(live, ", ")))
	}
	return fmt.Errorf("the advertisers did not go live after the warm-up installs cleared: rounds [%s]; still short [%s]",
		strings.Join(rounds, "; "), strings.Join(short, "; "))
}

// advance moves the test clock forward by d and follows it. A test clock
// stands still between moves while the estimate follows the wall clock, so
// a device may have signed a time ahead of the server's: the move first
// catches the server up with the estimate. Without it a click signed W
// seconds after the last move is claimed, by the device's clock, 15 s − W
// after it (fraud_ctit_too_short: seen in make history's mixed phase on a
// full store, whose rounds are slow).
func (g *generator) advance(ctx context.Context, d time.Duration) error {
	now, err := g.op.AdminGetClock(ctx)
	if err != nil {
		return fmt.Errorf("reading the test clock: %w", err)
	}
	if lag := g.f.clock.Now().Sub(now.Now); lag > 0 {
		d += lag.Truncate(time.Second) + time.Second // whole seconds, rounded up
	}
	state, err := g.op.AdminAdvanceClock(ctx, d)
	if err != nil {
		return fmt.Errorf("advancing the test clock: %w", err)
	}
	g.f.clock.follow(state.Now)
	return nil
}

// addrOpts sends c's address, when it has one.
func (g *generator) addrOpts(c click) []xpromo.CallOption {
	if c.addr == "" {
		return nil
	}
	return []xpromo.CallOption{xpromo.WithHeader("X-Forwarded-For", c.addr)}
}
