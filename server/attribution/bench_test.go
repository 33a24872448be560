package attribution_test

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// Benchmarks of attribution's three hot paths on both stores (BENCHMARKS.md,
// "Attribution"): fills/s, install claims/s, clearing settlements/s.

func eachStore(b *testing.B, fn func(b *testing.B, newStore func(b *testing.B) storage.Store)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, func(b *testing.B) storage.Store { return storagetest.SQLite(b) }) })
	b.Run("postgres", func(b *testing.B) { fn(b, func(b *testing.B) storage.Store { return storagetest.Postgres(b) }) })
}

// benchRules lift the velocity limits, which a benchmark's few apps and
// devices would otherwise reach.
var benchRules = attribution.Rules{IPInstalls: 1 << 30, DeviceInstalls: 1 << 30}

// BenchmarkFill: one op is one fill (the request's signature verified, the
// auction, the sealed offer, counted) of a publisher's slot in a category
// of 10 campaigns, from 2×GOMAXPROCS goroutines. Fills read nothing from
// the store once the app records and the SDK key are cached. The request
// is signed before the timer starts: signing is the SDK's work.
func BenchmarkFill(b *testing.B) {
	eachStore(b, func(b *testing.B, newStore func(b *testing.B) storage.Store) {
		w := newWorld(b, newStore(b), benchRules)
		pub := w.app("Publisher", xpromo.PlatformMac, "productivity")
		for i := range 10 {
			adv := w.app(fmt.Sprintf("Advertiser%d", i), xpromo.PlatformMac, "")
			w.topUp(adv, 1_000_000)
			w.campaign(adv, "productivity", 1_000_000, int64(400+i*10))
		}
		w.fill(pub) // warm the caches and delivery
		req := w.fillRequest(pub, xpromo.SlotAboutWindow, xpromo.PlatformMac)
		b.SetParallelism(2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, reason, err := w.serveFill(req)
				if err != nil || reason != "" {
					b.Error(err, reason)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fills/s")
	})
}

// BenchmarkClaim: one op is one accepted install claim (both signatures and
// the offer's MAC verified, the fraud rules' queries, the budget, the
// escrow hold, the chain and its outbox events, one transaction), the click
// not reported beforehand, from 16 goroutines over 16 advertisers. The
// tokens are signed before the timer starts: signing is the SDKs' work.
func BenchmarkClaim(b *testing.B) {
	eachStore(b, func(b *testing.B, newStore func(b *testing.B) storage.Store) {
		w := newWorld(b, newStore(b), benchRules)
		claims := benchClaims(b, w)
		b.ResetTimer()
		runClaims(b, w, claims)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
		b.StopTimer()
		w.verify()
	})
}

// benchClaims prepares BenchmarkClaim's world (16 pairs of apps, each
// advertiser with a campaign and money) and its b.N claims, signed.
func benchClaims(b *testing.B, w *world) []attribution.Claim {
	var pairs []pair
	for range 16 {
		p := w.pair("productivity", 0)
		w.topUp(p.adv, 9_000_000)
		p.campaign = w.campaign(p.adv, "productivity", market.MaxAmountCents, 0) // no budget limit
		pairs = append(pairs, p)
	}
	// Steady state: every app has traded (the first-trade rule is
	// behind them) and the caches hold their statuses.
	for i, p := range pairs {
		tok := w.clickOffer(p, w.offer(p, "productivity", 400), residential)
		if _, err := w.claim(p, tok, fmt.Sprintf("dev-warm-%d", i), 30*time.Second, residential); err != nil {
			b.Fatal(err)
		}
	}
	w.clock.Advance(attribution.DefaultCacheTTL)
	claims := make([]attribution.Claim, b.N)
	clickAt := w.now()
	for i := range claims {
		p := pairs[i%len(pairs)]
		tok := w.sign(p.pubKey, w.offer(p, "productivity", 400), clickAt)
		// Distinct addresses (shared address space, 100.64.0.0/10), as
		// from many users.
		ip := netip.AddrFrom4([4]byte{100, 64 + byte(i>>16&63), byte(i >> 8), byte(i)})
		claims[i] = attribution.Claim{Token: tok, IP: ip,
			Countersignature: w.countersign(p.advKey, tok, fmt.Sprintf("dev-%d", i), clickAt.Add(30*time.Second), p.adv)}
	}
	w.clock.Advance(30 * time.Second)
	return claims
}

// runClaims makes the claims from 8×GOMAXPROCS goroutines, each accepted.
func runClaims(b *testing.B, w *world, claims []attribution.Claim) {
	var next atomic.Int64
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := claims[next.Add(1)-1]
			if _, _, err := w.attr.Install(w.ctx, c); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSweep: one op is one chain settled by the sweep (cleared:
// release and charge of the hold, the publisher's earn, the take; the chain
// and its outbox events), 500 chains per transaction, 1 sweeper. The
// activated chains and their holds are written before the timer starts.
func BenchmarkSweep(b *testing.B) {
	eachStore(b, func(b *testing.B, newStore func(b *testing.B) storage.Store) {
		w := newWorld(b, newStore(b), benchRules)
		var pairs []pair
		for range 16 {
			p := w.pair("productivity", 0)
			w.topUp(p.adv, 9_000_000)
			pairs = append(pairs, p)
		}
		w.activated(pairs, b.N)
		b.ResetTimer()
		res, err := w.attr.Sweep(w.ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "settlements/s")
		b.StopTimer()
		if res.Cleared != b.N {
			b.Fatalf("cleared %d of %d", res.Cleared, b.N)
		}
		w.verify()
	})
}
