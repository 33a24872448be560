package attribution_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// utcDay is the UTC midnight starting t's day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// assertSpendMatchesChains holds the per-day spend a claim reads
// (CampaignSpend, kept by the store's triggers) and the day's spends
// delivery reloads (DaySpend, the same rows) to the sum over the chains
// themselves (SpendByCampaign) for every campaign and each of the last days.
func (w *world) assertSpendMatchesChains(campaigns []string, days int) {
	w.t.Helper()
	err := w.store.View(w.ctx, func(ctx context.Context, tx storage.Tx) error {
		today := utcDay(w.now())
		for d := range days {
			day := today.AddDate(0, 0, -d)
			sums, err := tx.SpendByCampaign(ctx, day, day.Add(24*time.Hour))
			if err != nil {
				return err
			}
			for _, c := range campaigns {
				got, err := tx.CampaignSpend(ctx, c, day)
				if err != nil {
					return err
				}
				assert.Equal(w.t, sums[c], got, "campaign %s on %s", c, day.Format(time.DateOnly))
			}
			kept, err := tx.DaySpend(ctx, day)
			if err != nil {
				return err
			}
			for c, n := range sums {
				if n == 0 { // DaySpend leaves campaigns at 0 out
					delete(sums, c)
				}
			}
			assert.Equal(w.t, sums, kept, "every campaign's spend on %s", day.Format(time.DateOnly))
		}
		return nil
	})
	require.NoError(w.t, err)
}

// TestCampaignSpendFollowsChains: the day's spend a claim checks the
// budget against is the sum over the day's chains after every kind of
// change: chains written installed or activated, claims accepted and
// refused (budget, reused token), the sweep's clears (which stay spend) and
// refunds (which leave it), on every day they touch.
func TestCampaignSpendFollowsChains(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p, q := w.pair("productivity", 0), w.pair("finance", 0)
		w.topUp(p.adv, 100_000)
		campaigns := []string{p.campaign, q.campaign}

		w.activated([]pair{p, q}, 6) // installed 50 hours ago
		w.lapsed([]pair{p, q}, 4)    // installed 73 hours ago, never activated
		w.assertSpendMatchesChains(campaigns, 5)

		for i := range 3 {
			_, _, err := w.clickAndInstall(p, fmt.Sprintf("dev-p-%d", i), residential)
			require.NoError(t, err)
		}
		_, tok, err := w.clickAndInstall(q, "dev-q", residential)
		require.NoError(t, err)
		// The same token claimed again by another device: refused, recorded
		// as a rejected chain of its own.
		_, err = w.claim(q, tok, "dev-q-again", time.Second, residential)
		assert.Equal(t, attribution.FraudTokenReused, apperr.Code(err))
		// Created after p's claims, which the auction could have awarded it.
		low := p
		low.campaign = w.campaign(p.adv, "productivity", 1000, 0) // two installs of 400 a day
		campaigns = append(campaigns, low.campaign)
		for i := range 3 {
			tok := w.clickOffer(low, w.offer(low, "productivity", 400), residential)
			_, err := w.claim(low, tok, fmt.Sprintf("dev-low-%d", i), 30*time.Second, residential)
			if i < 2 {
				require.NoError(t, err)
			} else {
				assert.Equal(t, apperr.BudgetExhausted, apperr.Code(err))
			}
		}
		w.assertSpendMatchesChains(campaigns, 5)

		res, err := w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, 6, res.Cleared)
		assert.Equal(t, 4, res.Refunded)
		w.assertSpendMatchesChains(campaigns, 5)

		// Today's installs lapse three days later: refunded, their day's
		// spend goes back to what is left.
		w.clock.Advance(attribution.ActivationWindowEnd + time.Hour)
		res, err = w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, 6, res.Refunded)
		w.assertSpendMatchesChains(campaigns, 6)
		w.verify()
	})
}

// TestBudgetConcurrentClaims: n claims at once on a campaign whose daily
// budget buys k installs: exactly k are accepted, the rest refused with
// budget_exhausted, and the day's spend is k prices.
func TestBudgetConcurrentClaims(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		const n, k, price = 12, 3, 400
		p := w.pair("productivity", 0)
		p.campaign = w.campaign(p.adv, "productivity", k*price+price/2, 0)
		clickAt := w.now()
		claims := make([]attribution.Claim, n)
		for i := range claims {
			tok := w.sign(p.pubKey, w.offer(p, "productivity", price), clickAt)
			claims[i] = attribution.Claim{Token: tok, IP: netip.AddrFrom4([4]byte{198, 51, 100, byte(10 + i)}),
				Countersignature: w.countersign(p.advKey, tok, fmt.Sprintf("dev-%d", i), clickAt.Add(30*time.Second), p.adv)}
		}
		w.clock.Advance(30 * time.Second)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range claims {
			wg.Go(func() { _, _, errs[i] = w.attr.Install(w.ctx, claims[i]) })
		}
		wg.Wait()
		accepted := 0
		for _, err := range errs {
			if err == nil {
				accepted++
				continue
			}
			assert.Equal(t, apperr.BudgetExhausted, apperr.Code(err), "%v", err)
		}
		assert.Equal(t, k, accepted)
		err := w.store.View(w.ctx, func(ctx context.Context, tx storage.Tx) error {
			spent, err := tx.CampaignSpend(ctx, p.campaign, utcDay(w.now()))
			assert.Equal(t, int64(k*price), spent)
			return err
		})
		require.NoError(t, err)
		w.assertSpendMatchesChains([]string{p.campaign}, 1)
		w.verify()
	})
}

// BenchmarkCampaignSpend: one op is one read of a campaign's spend of the
// day, as a claim's budget check makes it (row: CampaignSpend, the row the
// triggers keep), with 0 or 10,000 of the campaign's chains installed that
// day: its cost must not grow with the day's installs. day is delivery's
// reload of every campaign's spend of the day (DaySpend, the day's rows);
// sum is the sum over the day's chains (SpendByCampaign; the campaign is the
// only one) that both made before, for comparison.
func BenchmarkCampaignSpend(b *testing.B) {
	eachStore(b, func(b *testing.B, newStore func(b *testing.B) storage.Store) {
		for _, installs := range []int{0, 10_000} {
			store := newStore(b)
			w := newWorld(b, store, benchRules)
			p := w.pair("productivity", 0)
			p.campaign = w.campaign(p.adv, "productivity", market.MaxAmountCents, 0)
			now := w.now()
			for start := 0; start < installs; start += 1000 {
				err := store.Update(w.ctx, func(ctx context.Context, tx storage.Tx) error {
					for range min(1000, installs-start) {
						c := attribution.Chain{ID: ids.New("ch"), Nonce: ids.New("n"), State: attribution.StateInstalled,
							CampaignID: p.campaign, PublisherAppID: p.pub, AdvertiserAppID: p.adv, Category: "productivity",
							Platform: xpromo.PlatformMac, PriceCents: 400, ClickedAt: now, ExpiresAt: now.Add(15 * time.Minute),
							InstalledAt: now, CreatedAt: now, UpdatedAt: now}
						if _, err := tx.InsertChain(ctx, c); err != nil {
							return err
						}
					}
					return nil
				})
				require.NoError(b, err)
			}
			today, want := utcDay(now), int64(installs*400)
			for _, read := range []struct {
				name string
				fn   func(ctx context.Context, tx storage.Tx) (int64, error)
			}{
				{"row", func(ctx context.Context, tx storage.Tx) (int64, error) {
					return tx.CampaignSpend(ctx, p.campaign, today)
				}},
				{"day", func(ctx context.Context, tx storage.Tx) (int64, error) {
					m, err := tx.DaySpend(ctx, today)
					return m[p.campaign], err
				}},
				{"sum", func(ctx context.Context, tx storage.Tx) (int64, error) {
					m, err := tx.SpendByCampaign(ctx, today, today.Add(24*time.Hour))
					return m[p.campaign], err
				}},
			} {
				b.Run(fmt.Sprintf("installs=%d/%s", installs, read.name), func(b *testing.B) {
					err := store.View(w.ctx, func(ctx context.Context, tx storage.Tx) error {
						for b.Loop() {
							spent, err := read.fn(ctx, tx)
							if err != nil {
								return err
							}
							if spent != want {
								return fmt.Errorf("spent %d, want %d", spent, want)
							}
						}
						return nil
					})
					require.NoError(b, err)
				})
			}
			w.verify()
		}
	})
}
