package storetest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/rollup"
	"github.com/xpromo/xpromo/server/storage"
)

// Rollups checks the daily rollups (migration 00032) against the raw facts
// after random operations: clicks, refused claims, installs and their
// escrow holds, rejections, activations, heartbeats, clearings, refunds
// (publisher_suspended with the chain written before or after its release),
// clawbacks, holds without a chain, and fill counts, over ten UTC days.
// Every whole day's rollup must equal the raw query of that day, any window
// split by package rollup must equal the raw query of the window, and each
// day of DailyStats must equal the figures counted here from the chains
// and money the test wrote.
//
// redo, when not nil, rolls the store's migrations back to the version it
// is given and applies them again: after the first comparison the rollups
// of the network (migration 00043) are dropped and rebuilt by that
// migration's backfill from the per-app rows already written, and every
// window is compared again.
func Rollups(t *testing.T, newStore func(t *testing.T) storage.Store, redo func(t *testing.T, s storage.Store, from int64)) {
	t.Run("MatchRawFacts", func(t *testing.T) { testRollupsMatchRawFacts(t, newStore(t), redo) })
}

type rollupWorld struct {
	t      *testing.T
	s      storage.Store
	rng    *rand.Rand
	now    time.Time
	start  time.Time
	seq    int
	chains []string                     // ids, in creation order
	mem    map[string]attribution.Chain // each chain as last written
	holds  []ledger.Hold
	// Money, counted here: spend by (advertiser, campaign, day), earned by
	// (publisher, campaign, day); fills by (side, app, campaign, day).
	spend, earned map[[3]string]int64
	fills         map[[4]string]int64
	cleared       map[string]ledger.Hold // chain id: its hold, once cleared (for clawbacks)
}

var (
	rollupAdvertisers = []string{"app_adv1", "app_adv2"}
	rollupPublishers  = []string{"app_pub1", "app_pub2", "app_pub3"}
	rollupCampaigns   = map[string][]string{"app_adv1": {"cmp_a1", "cmp_a2"}, "app_adv2": {"cmp_b1"}}
	rollupCategories  = []string{"cat_games", "cat_tools"}
)

func (w *rollupWorld) update(fn func(ctx context.Context, tx storage.Tx) error) {
	w.t.Helper()
	require.NoError(w.t, w.s.Update(context.Background(), fn))
}

func (w *rollupWorld) id(prefix string) string {
	w.seq++
	return fmt.Sprintf("%s_%05d", prefix, w.seq)
}

func (w *rollupWorld) chain(id string) attribution.Chain {
	var c attribution.Chain
	require.NoError(w.t, w.s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		var found bool
		var err error
		c, found, err = tx.ChainByID(ctx, id)
		if err == nil && !found {
			err = fmt.Errorf("chain %s not found", id)
		}
		return err
	}))
	return c
}

// pick returns a random chain in state st, or false.
func (w *rollupWorld) pick(st attribution.State) (attribution.Chain, bool) {
	var of []attribution.Chain
	for _, id := range w.chains {
		if c := w.mem[id]; c.State == st {
			of = append(of, c)
		}
	}
	if len(of) == 0 {
		return attribution.Chain{}, false
	}
	return of[w.rng.IntN(len(of))], true
}

func (w *rollupWorld) apply(ctx context.Context, tx storage.Tx, ops ...ledger.Operation) error {
	_, errs, err := ledger.Apply(ctx, tx, w.now, ops)
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (w *rollupWorld) step() {
	day := rollup.Day(w.now).Format(time.DateOnly)
	switch op := w.rng.IntN(12); op {
	case 0, 1: // a click
		adv := rollupAdvertisers[w.rng.IntN(len(rollupAdvertisers))]
		cmps := rollupCampaigns[adv]
		c := attribution.Chain{ID: w.id("chn"), Nonce: w.id("jti"), State: attribution.StateClicked,
			CampaignID: cmps[w.rng.IntN(len(cmps))], AdvertiserAppID: adv, PublisherAppID: rollupPublishers[w.rng.IntN(len(rollupPublishers))],
			Category: rollupCategories[w.rng.IntN(len(rollupCategories))], Platform: xpromo.PlatformMac,
			PriceCents: int64(100 + w.rng.IntN(500)), OfferedAt: w.now.Add(-time.Duration(w.rng.IntN(3600)) * time.Second),
			ClickedAt: w.now, CreatedAt: w.now, UpdatedAt: w.now}
		w.update(func(ctx context.Context, tx storage.Tx) error {
			ok, err := tx.InsertChain(ctx, c)
			if err == nil && !ok {
				err = fmt.Errorf("chain %s not inserted", c.ID)
			}
			return err
		})
		w.chains, w.mem[c.ID] = append(w.chains, c.ID), c
	case 2: // the record of a refused claim, with or without its advertiser
		c := attribution.Chain{ID: w.id("chn"), ClaimedNonce: w.id("jti"), State: attribution.StateRejected,
			Reason: []string{"fraud_signature", "expired", "fraud_replay"}[w.rng.IntN(3)], CreatedAt: w.now, UpdatedAt: w.now}
		if w.rng.IntN(2) == 0 {
			c.AdvertiserAppID, c.ResolvedAt = rollupAdvertisers[0], w.now
		}
		w.update(func(ctx context.Context, tx storage.Tx) error {
			_, err := tx.InsertChain(ctx, c)
			return err
		})
		w.chains, w.mem[c.ID] = append(w.chains, c.ID), c
	case 3, 4: // an install claim accepted (its hold) or rejected by a rule
		c, ok := w.pick(attribution.StateClicked)
		if !ok {
			return
		}
		if w.rng.IntN(4) == 0 {
			c.State, c.Reason, c.ResolvedAt = attribution.StateRejected, []string{"fraud_device", "fraud_velocity", "click_expired"}[w.rng.IntN(3)], w.now
			w.update(func(ctx context.Context, tx storage.Tx) error { return tx.UpdateChains(ctx, []attribution.Chain{c}) })
			w.mem[c.ID] = c
			return
		}
		c.State, c.InstalledAt, c.DeviceID, c.UpdatedAt = attribution.StateInstalled, w.now, w.id("dev"), w.now
		h := ledger.Hold{ID: c.HoldID(), Advertiser: c.AdvertiserAppID, Publisher: c.PublisherAppID, Amount: c.PriceCents, ChainID: c.ID}
		w.update(func(ctx context.Context, tx storage.Tx) error {
			if err := w.apply(ctx, tx, must(ledger.EscrowHold("hold:"+c.ID, h))); err != nil {
				return err
			}
			return tx.UpdateChains(ctx, []attribution.Chain{c})
		})
		w.mem[c.ID] = c
	case 5: // a heartbeat (changes no figure) or the activation
		c, ok := w.pick(attribution.StateInstalled)
		if !ok {
			return
		}
		c.HeartbeatSeq++
		c.LastHeartbeatAt, c.UpdatedAt = w.now, w.now
		if w.rng.IntN(3) > 0 {
			c.State, c.ActivatedAt = attribution.StateActivated, w.now
		}
		w.update(func(ctx context.Context, tx storage.Tx) error { return tx.UpdateChains(ctx, []attribution.Chain{c}) })
		w.mem[c.ID] = c
	case 6, 7: // the sweep: clear, refund publisher_suspended, refund not_activated
		c, ok := w.pick(attribution.StateActivated)
		if !ok || w.rng.IntN(5) == 0 {
			if c, ok = w.pick(attribution.StateInstalled); !ok {
				return
			}
		}
		h := ledger.Hold{ID: c.HoldID(), Advertiser: c.AdvertiserAppID, Publisher: c.PublisherAppID, Amount: c.PriceCents, ChainID: c.ID}
		var op ledger.Operation
		switch {
		case c.State == attribution.StateActivated && w.rng.IntN(4) > 0:
			mode := []ledger.EarnMode{ledger.EarnCash, ledger.EarnCredits}[w.rng.IntN(2)]
			op = must(ledger.Clear("clear:"+c.ID, h, mode))
			c.State = attribution.StateCleared
			earn, _, _ := ledger.Split(h.Amount, mode)
			w.spend[[3]string{c.AdvertiserAppID, c.CampaignID, day}] += h.Amount
			w.earned[[3]string{c.PublisherAppID, c.CampaignID, day}] += earn
			w.cleared[c.ID] = h
		case c.State == attribution.StateActivated:
			op = must(ledger.EscrowRelease("release:"+c.ID, h))
			c.State, c.Reason = attribution.StateRefunded, attribution.ReasonPublisherSuspended
		default:
			op = must(ledger.EscrowRelease("release:"+c.ID, h))
			c.State, c.Reason = attribution.StateRefunded, attribution.ReasonNotActivated
		}
		c.ResolvedAt, c.UpdatedAt = w.now, w.now
		chainFirst := w.rng.IntN(2) == 0
		w.update(func(ctx context.Context, tx storage.Tx) error {
			if chainFirst {
				if err := tx.SettleChains(ctx, []attribution.Chain{c}); err != nil {
					return err
				}
				return w.apply(ctx, tx, op)
			}
			if err := w.apply(ctx, tx, op); err != nil {
				return err
			}
			return tx.SettleChains(ctx, []attribution.Chain{c})
		})
		w.mem[c.ID] = c
	case 8: // a clawback of a cleared install
		ids := slices.Sorted(maps.Keys(w.cleared))
		if len(ids) == 0 {
			return
		}
		id := ids[0]
		h := w.cleared[id]
		earn, _, _ := ledger.Split(h.Amount, ledger.EarnCash)
		w.update(func(ctx context.Context, tx storage.Tx) error {
			return w.apply(ctx, tx, must(ledger.Clawback("clawback:"+id, h, ledger.EarnCash, "fraud found later")))
		})
		w.earned[[3]string{h.Publisher, w.mem[id].CampaignID, day}] -= earn
		delete(w.cleared, id)
	case 9: // a hold posted without a chain, and later its resolution
		if len(w.holds) > 0 && w.rng.IntN(2) == 0 {
			h := w.holds[0]
			w.holds = w.holds[1:]
			op := must(ledger.EscrowRelease("release:"+h.ID, h))
			if w.rng.IntN(2) == 0 { // charged, with no floor to count
				op = must(ledger.Clear("clear:"+h.ID, h, ledger.EarnCash))
			}
			w.update(func(ctx context.Context, tx storage.Tx) error { return w.apply(ctx, tx, op) })
			return
		}
		h := ledger.Hold{ID: w.id("hold"), Advertiser: rollupAdvertisers[w.rng.IntN(2)], Publisher: rollupPublishers[0], Amount: 250}
		w.update(func(ctx context.Context, tx storage.Tx) error {
			return w.apply(ctx, tx, must(ledger.EscrowHold("hold:"+h.ID, h)))
		})
		w.holds = append(w.holds, h)
	case 10, 11: // a flush of fill counters
		var counts []attribution.FillCount // one per key, as the server flushes them
		seen := map[string]bool{}
		for range 1 + w.rng.IntN(4) {
			adv := rollupAdvertisers[w.rng.IntN(len(rollupAdvertisers))]
			cmp := rollupCampaigns[adv][w.rng.IntN(len(rollupCampaigns[adv]))]
			pub := rollupPublishers[w.rng.IntN(len(rollupPublishers))]
			n := int64(1 + w.rng.IntN(50))
			if seen[cmp+pub] {
				continue
			}
			seen[cmp+pub] = true
			counts = append(counts, attribution.FillCount{Day: rollup.Day(w.now), CampaignID: cmp, AdvertiserAppID: adv, PublisherAppID: pub, Count: n})
			w.fills[[4]string{"advertiser", adv, cmp, day}] += n
			w.fills[[4]string{"publisher", pub, cmp, day}] += n
		}
		w.update(func(ctx context.Context, tx storage.Tx) error { return tx.AddFillCounts(ctx, counts) })
	}
}

func testRollupsMatchRawFacts(t *testing.T, s storage.Store, redo func(t *testing.T, s storage.Store, from int64)) {
	ctx := context.Background()
	w := &rollupWorld{t: t, s: s, rng: rand.New(rand.NewPCG(32, 33)), mem: map[string]attribution.Chain{},
		start: time.Date(2026, 11, 20, 21, 0, 0, 0, time.UTC),
		spend: map[[3]string]int64{}, earned: map[[3]string]int64{}, fills: map[[4]string]int64{}, cleared: map[string]ledger.Hold{}}
	w.now = w.start
	// Floors: one category's history starts before every offer, the
	// other's after the first ones (their floor is its first version).
	w.update(func(ctx context.Context, tx storage.Tx) error {
		for i, cat := range rollupCategories {
			for v := int64(1); v <= 3; v++ {
				at := w.start.Add(time.Duration(int64(i)*30+v*20-40) * time.Hour)
				if err := tx.AppendFloor(ctx, market.Floor{Category: cat, Platform: xpromo.PlatformMac, FloorCents: 500 - 50*v, Version: v, Reason: "test", At: at}); err != nil {
					return err
				}
			}
		}
		for _, adv := range rollupAdvertisers {
			if err := w.apply(ctx, tx, must(ledger.TopUp("topup:"+adv, adv, 10_000_000, ""))); err != nil {
				return err
			}
		}
		return nil
	})
	for range 400 {
		w.step()
		w.now = w.now.Add(time.Duration(w.rng.IntN(3*3600)) * time.Second).Add(time.Duration(w.rng.IntN(1e6)) * time.Microsecond)
	}
	end := w.now

	apps := append(append([]string{""}, rollupAdvertisers...), rollupPublishers...)
	view := func(fn func(ctx context.Context, tx storage.Tx) error) {
		t.Helper()
		require.NoError(t, s.View(ctx, fn))
	}
	// Every whole day, the whole days up to now from each midnight (the
	// network's window: rollup.Days), and windows that start inside a day.
	var windows [][2]time.Time
	for d := rollup.Day(w.start).AddDate(0, 0, -1); !d.After(end); d = d.AddDate(0, 0, 1) {
		windows = append(windows, [2]time.Time{d, d.AddDate(0, 0, 1).Add(-time.Microsecond)}, [2]time.Time{d, end})
	}
	for range 20 {
		from := w.start.Add(time.Duration(w.rng.Int64N(int64(end.Sub(w.start)))))
		windows = append(windows, [2]time.Time{from, end})
	}
	matchRaw := func(stage string) {
		t.Helper()
		view(func(ctx context.Context, tx storage.Tx) error {
			return rollupsMatchRawIn(ctx, t, tx, stage, windows, apps)
		})
	}
	matchRaw("as written")
	if redo != nil {
		redo(t, s, 42)
		matchRaw("rebuilt by 00043's backfill")
	}

	// DailyStats against the chains as they are now and the money and fills
	// counted as they were written.
	want := map[[4]string]attribution.DailyRow{} // (app, campaign, day, side)
	row := func(app, cmp, side string, at time.Time) *attribution.DailyRow {
		k := [4]string{app, cmp, rollup.Day(at).Format(time.DateOnly), side}
		r := want[k]
		r.Day, r.Side = rollup.Day(at), side
		want[k] = r
		return &r
	}
	add := func(app, cmp, side string, at time.Time, f func(r *attribution.DailyRow)) {
		r := row(app, cmp, side, at)
		f(r)
		want[[4]string{app, cmp, rollup.Day(at).Format(time.DateOnly), side}] = *r
	}
	for _, id := range w.chains {
		c := w.chain(id)
		if c.Nonce != "" {
			add(c.AdvertiserAppID, c.CampaignID, "advertiser", c.CreatedAt, func(r *attribution.DailyRow) { r.Clicks++ })
			add(c.PublisherAppID, c.CampaignID, "publisher", c.CreatedAt, func(r *attribution.DailyRow) { r.Clicks++ })
		}
		if !c.InstalledAt.IsZero() {
			add(c.AdvertiserAppID, c.CampaignID, "advertiser", c.InstalledAt, func(r *attribution.DailyRow) { r.Installs++ })
			add(c.PublisherAppID, c.CampaignID, "publisher", c.InstalledAt, func(r *attribution.DailyRow) { r.Installs++ })
		}
		if !c.ActivatedAt.IsZero() {
			add(c.AdvertiserAppID, c.CampaignID, "advertiser", c.ActivatedAt, func(r *attribution.DailyRow) { r.Activated++ })
		}
		if !c.ResolvedAt.IsZero() {
			add(c.AdvertiserAppID, c.CampaignID, "advertiser", c.ResolvedAt, func(r *attribution.DailyRow) {
				switch c.State {
				case attribution.StateCleared:
					r.Cleared++
				case attribution.StateRefunded:
					r.Refunded++
				case attribution.StateRejected:
					r.Rejected++
				}
			})
			if c.State == attribution.StateCleared {
				add(c.PublisherAppID, c.CampaignID, "publisher", c.ResolvedAt, func(r *attribution.DailyRow) { r.Cleared++ })
			}
		}
	}
	date := func(s string) time.Time { return must(time.Parse(time.DateOnly, s)) }
	for k, n := range w.spend {
		add(k[0], k[1], "advertiser", date(k[2]), func(r *attribution.DailyRow) { r.SpendCents += n })
	}
	for k, n := range w.earned {
		add(k[0], k[1], "publisher", date(k[2]), func(r *attribution.DailyRow) { r.EarnedCents += n })
	}
	for k, n := range w.fills {
		add(k[1], k[2], k[0], date(k[3]), func(r *attribution.DailyRow) { r.Fills += n })
	}
	first, last := rollup.Day(w.start), rollup.Day(end)
	for _, app := range apps[1:] {
		for _, cmp := range []string{"", "cmp_a1", "cmp_a2", "cmp_b1"} {
			var expect []attribution.DailyRow
			for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
				for _, side := range []string{"advertiser", "publisher"} {
					var sum attribution.DailyRow
					found := false
					for k, r := range want {
						if k[0] == app && (cmp == "" || k[1] == cmp) && k[2] == d.Format(time.DateOnly) && k[3] == side {
							sum = addRows(sum, r)
							found = true
						}
					}
					if sum.Day, sum.Side = d, side; found && (sum != attribution.DailyRow{Day: d, Side: side}) {
						expect = append(expect, sum)
					}
				}
			}
			var got []attribution.DailyRow
			view(func(ctx context.Context, tx storage.Tx) (err error) {
				got, err = tx.DailyStats(ctx, app, cmp, first, last)
				return err
			})
			var nonzero []attribution.DailyRow
			for _, r := range got {
				if (r != attribution.DailyRow{Day: r.Day, Side: r.Side}) {
					nonzero = append(nonzero, r)
				}
			}
			require.Equal(t, expect, nonzero, "daily stats of %s, campaign %q", app, cmp)
		}
	}
}

func addRows(a, b attribution.DailyRow) attribution.DailyRow {
	a.Fills += b.Fills
	a.Clicks += b.Clicks
	a.Installs += b.Installs
	a.Activated += b.Activated
	a.Cleared += b.Cleared
	a.Refunded += b.Refunded
	a.Rejected += b.Rejected
	a.SpendCents += b.SpendCents
	a.EarnedCents += b.EarnedCents
	return a
}

// rollupsMatchRawIn fails the test unless every window's stats read through
// the rollups (package rollup's split) equal the raw facts' for each app
// and the network.
func rollupsMatchRawIn(ctx context.Context, t *testing.T, tx storage.Tx, stage string, windows [][2]time.Time, apps []string) error {
	t.Helper()
	for _, win := range windows {
		sp := rollup.Split(win[0], win[1])
		for _, app := range apps {
			raw := must(tx.AppChainStats(ctx, app, win[0], win[1]))
			hraw := must(tx.AdvertiserHoldStats(ctx, app, win[0], win[1]))
			got, hgot := attribution.ChainStats{FraudRejected: map[string]int64{}}, market.HoldStats{}
			if sp.HasRaw {
				got = must(tx.AppChainStats(ctx, app, sp.From, sp.RawTo))
				hgot = must(tx.AdvertiserHoldStats(ctx, app, sp.From, sp.RawTo))
			}
			if sp.HasDays {
				days := must(tx.ChainStatsDays(ctx, app, sp.FirstDay, sp.LastDay))
				got.Impressions += days.Impressions
				got.Clicks += days.Clicks
				for k, n := range days.FraudRejected {
					got.FraudRejected[k] += n
				}
				hgot = hgot.Add(must(tx.AdvertiserHoldStatsDays(ctx, app, sp.FirstDay, sp.LastDay)))
			}
			require.Equal(t, raw, got, "app %q chain stats over %v, %s", app, win, stage)
			require.Equal(t, hraw, hgot, "app %q hold stats over %v, %s", app, win, stage)
		}
		raw := must(tx.NetworkChainStats(ctx, win[0], win[1]))
		hraw := must(tx.NetworkHoldStats(ctx, win[0], win[1]))
		got, hgot := attribution.NetworkStats{CPISum: map[string]int64{}, CPICount: map[string]int64{}}, market.HoldStats{}
		if sp.HasRaw {
			got = must(tx.NetworkChainStats(ctx, sp.From, sp.RawTo))
			hgot = must(tx.NetworkHoldStats(ctx, sp.From, sp.RawTo))
		}
		if sp.HasDays {
			days := must(tx.NetworkChainStatsDays(ctx, sp.FirstDay, sp.LastDay))
			got.Chains += days.Chains
			got.FraudRejected += days.FraudRejected
			for k := range days.CPICount {
				got.CPISum[k] += days.CPISum[k]
				got.CPICount[k] += days.CPICount[k]
			}
			hgot = hgot.Add(must(tx.NetworkHoldStatsDays(ctx, sp.FirstDay, sp.LastDay)))
		}
		require.Equal(t, raw, got, "network chain stats over %v, %s", win, stage)
		require.Equal(t, hraw, hgot, "network hold stats over %v, %s", win, stage)
	}
	return nil
}
