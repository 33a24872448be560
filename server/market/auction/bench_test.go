package auction_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xpromo/xpromo/server/market/auction"
)

// BenchmarkDecide measures the engine alone: one decision of a stream of n
// campaigns per iteration (bids spread above a 400-cent floor, a third of
// them floor buyers, one in ten short of headroom), reported as
// decisions/s on one goroutine.
func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("campaigns=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			const floor = 400
			bidders := make([]auction.Bidder, n)
			for i := range bidders {
				bid := int64(floor)
				if i%3 != 0 {
					bid += r.Int64N(600)
				}
				headroom := bid + r.Int64N(100_000)
				if i%10 == 0 {
					headroom = floor + r.Int64N(bid-floor+1)
				}
				bidders[i] = auction.Bidder{ID: fmt.Sprint("cmp_", i), Ref: i, Bid: bid, Headroom: headroom}
			}
			var s auction.Stream
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, ok := s.Decide(floor, bidders, r); !ok {
					b.Fatal("no fill")
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
