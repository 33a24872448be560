package auction_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/market/auction"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// The schedule is the rate card's reserved share.
func TestReservedShareIsTheRateCards(t *testing.T) {
	assert.Equal(t, xpromo.ReservedFloorShare, float64(auction.ReservedPerBlock)/float64(auction.BlockSize))
}

// market is a random market: a floor and bidders around it, with ties
// (bids drawn from a narrow range), bidders below the floor, and headrooms
// anywhere from nothing to more than the bid.
func market(r *rand.Rand) (int64, []auction.Bidder) {
	floor := 1 + r.Int64N(800)
	n := r.IntN(12)
	if r.IntN(10) == 0 {
		n = 20 + r.IntN(80)
	}
	spread := 1 + r.Int64N(40)
	bs := make([]auction.Bidder, n)
	for i := range bs {
		bid := floor + r.Int64N(spread)
		if r.IntN(12) == 0 {
			bid = max(1, floor-1-r.Int64N(floor)) // cannot pay the floor
		}
		var headroom int64
		switch r.IntN(4) {
		case 0:
			headroom = r.Int64N(floor + 1) // maybe below the floor
		case 1:
			headroom = floor + r.Int64N(spread+1) // between floor and bid, or so
		default:
			headroom = bid + r.Int64N(1000) // fully funded
		}
		bs[i] = auction.Bidder{ID: fmt.Sprint("c", i), Ref: i, Bid: bid, Headroom: headroom}
	}
	return floor, bs
}

func eligibleAt(b auction.Bidder, p int64) bool { return b.Bid >= p && b.Headroom >= p }

// oracle decides an auctioned fill the slow, obvious way: sort by bid, and
// while the top bidder cannot afford its price, drop it. It needs distinct
// bids (no tie to break).
func oracle(floor int64, bidders []auction.Bidder) (auction.Bidder, int64, bool) {
	var in []auction.Bidder
	for _, b := range bidders {
		if eligibleAt(b, floor) {
			in = append(in, b)
		}
	}
	slices.SortFunc(in, func(a, b auction.Bidder) int { return int(b.Bid - a.Bid) })
	for len(in) > 0 {
		price := floor
		if len(in) > 1 {
			price = max(floor, min(in[0].Bid, in[1].Bid+1))
		}
		if in[0].Headroom >= price {
			return in[0], price, true
		}
		in = in[1:]
	}
	return auction.Bidder{}, 0, false
}

func distinctBids(floor int64, bs []auction.Bidder) bool {
	seen := map[int64]bool{}
	for _, b := range bs {
		if !eligibleAt(b, floor) {
			continue
		}
		if seen[b.Bid] {
			return false
		}
		seen[b.Bid] = true
	}
	return true
}

// Property test over many random markets and seeds: every decision of a
// stream obeys the pricing, eligibility and reservation rules.
func TestDecideProperties(t *testing.T) {
	const seeds, fillsPerSeed = 400, 60
	var reservedFills, auctioned, oracleChecked int
	for seed := range uint64(seeds) {
		r := seeded(seed)
		var s auction.Stream
		var made, reservedInBlock int
		for range fillsPerSeed {
			floor, bs := market(r)
			orig := slices.Clone(bs)
			res, ok := s.Decide(floor, bs, r)
			assert.ElementsMatch(t, orig, bs, "seed %d: Decide may reorder bidders, never change them", seed)
			anyEligible := slices.ContainsFunc(orig, func(b auction.Bidder) bool { return eligibleAt(b, floor) })
			require.Equal(t, anyEligible, ok, "seed %d: a fill is made exactly when someone is eligible at floor", seed)
			if !ok {
				continue
			}
			w := res.Winner
			require.Contains(t, orig, w, "seed %d: the winner is one of the bidders, unchanged", seed)
			assert.GreaterOrEqual(t, res.Price, floor, "seed %d: price ≥ floor", seed)
			assert.LessOrEqual(t, res.Price, w.Bid, "seed %d: price ≤ the winner's bid", seed)
			assert.LessOrEqual(t, res.Price, w.Headroom, "seed %d: the winner can be charged the price", seed)

			made++
			if res.Reserved {
				reservedFills++
				reservedInBlock++
				assert.Equal(t, floor, res.Price, "seed %d: reserved fills are at floor", seed)
			} else {
				auctioned++
				checkAuction(t, seed, floor, orig, res)
				if distinctBids(floor, orig) {
					oracleChecked++
					ow, op, _ := oracle(floor, orig)
					assert.Equal(t, ow.ID, w.ID, "seed %d: winner", seed)
					assert.Equal(t, op, res.Price, "seed %d: price", seed)
				}
			}
			if made%auction.BlockSize == 0 {
				assert.Equal(t, auction.ReservedPerBlock, reservedInBlock, "seed %d: block ending at fill %d", seed, made)
				reservedInBlock = 0
			}
		}
		assert.Equal(t, made%auction.BlockSize, s.Position(), "seed %d", seed)
	}
	t.Logf("%d reserved and %d auctioned fills; %d auctions checked against the oracle", reservedFills, auctioned, oracleChecked)
	require.Greater(t, oracleChecked, 1000, "the generator must give the oracle enough to check")
}

// checkAuction asserts the second-price rule on an auctioned fill, ties
// included (where the oracle cannot say which tied bidder wins).
func checkAuction(t *testing.T, seed uint64, floor int64, bs []auction.Bidder, res auction.Result) {
	t.Helper()
	w := res.Winner
	// Bidders under the winner never leave before it wins, so the next
	// bid is at least the highest of theirs; a fully funded bidder never
	// leaves at all.
	lowerNext := int64(-1)
	for _, b := range bs {
		if b == w || !eligibleAt(b, floor) {
			continue
		}
		funded := b.Headroom >= b.Bid
		if b.Bid > w.Bid && funded {
			t.Errorf("seed %d: %s bid %d and could pay it, yet %s won with %d", seed, b.ID, b.Bid, w.ID, w.Bid)
		}
		if b.Bid == w.Bid && funded && res.Price != w.Bid {
			t.Errorf("seed %d: tie at %d with a funded rival, price %d", seed, w.Bid, res.Price)
		}
		if b.Bid < w.Bid {
			lowerNext = max(lowerNext, b.Bid)
		}
	}
	least := floor
	if lowerNext >= 0 {
		least = max(floor, min(w.Bid, lowerNext+1))
	}
	assert.GreaterOrEqual(t, res.Price, least, "seed %d: one cent above the next-highest bid", seed)
}

// The reserved positions are drawn anew for each block, each position
// reserved equally often.
func TestReservedPositionsAreUniform(t *testing.T) {
	r := seeded(7)
	var s auction.Stream
	bidders := []auction.Bidder{{ID: "a", Bid: 100, Headroom: 1000}}
	const blocks = 20000
	var perPosition [auction.BlockSize]int
	patterns := map[[auction.BlockSize]bool]bool{}
	for range blocks {
		var pattern [auction.BlockSize]bool
		for i := range auction.BlockSize {
			res, ok := s.Decide(100, bidders, r)
			require.True(t, ok)
			if res.Reserved {
				perPosition[i]++
				pattern[i] = true
			}
		}
		patterns[pattern] = true
	}
	for i, n := range perPosition {
		share := float64(n) / blocks
		assert.InDelta(t, 0.3, share, 0.02, "position %d reserved %.3f of blocks", i, share)
	}
	// C(10,3) = 120 possible patterns: all of them occur.
	assert.Len(t, patterns, 120)
}

// A stream without an eligible bidder makes no fill and does not move its
// schedule.
func TestNoEligibleBidderUsesNoPosition(t *testing.T) {
	r := seeded(3)
	var s auction.Stream
	none := []auction.Bidder{{ID: "poor", Bid: 500, Headroom: 99}, {ID: "cheap", Bid: 99, Headroom: 1000}}
	for range 25 {
		_, ok := s.Decide(100, none, r)
		require.False(t, ok)
	}
	assert.Equal(t, 0, s.Position())
	_, ok := s.Decide(100, nil, r)
	assert.False(t, ok)
}

// Reserved fills give every eligible bidder the same chance, whatever it
// bids; ineligible ones never win.
func TestFloorAllocationIsEqualChance(t *testing.T) {
	r := seeded(11)
	bidders := []auction.Bidder{
		{ID: "floor-buyer", Bid: 300, Headroom: 10_000},
		{ID: "rich", Bid: 5_000, Headroom: 100_000},
		{ID: "mid", Bid: 800, Headroom: 300}, // can pay the floor, not its bid
		{ID: "broke", Bid: 900, Headroom: 299},
		{ID: "under", Bid: 299, Headroom: 10_000},
	}
	const n = 30000
	wins := map[string]int{}
	for range n {
		res, ok := auction.FloorAllocation(300, bidders, r)
		require.True(t, ok)
		require.True(t, res.Reserved)
		require.Equal(t, int64(300), res.Price)
		wins[res.Winner.ID]++
	}
	assert.Zero(t, wins["broke"])
	assert.Zero(t, wins["under"])
	for _, id := range []string{"floor-buyer", "rich", "mid"} {
		assert.InDelta(t, 1.0/3, float64(wins[id])/n, 0.015, id)
	}
}

// Equal highest bids are broken at random, each equally likely; the winner
// pays its bid (the next-highest bid is the same).
func TestTiesAreBrokenFairly(t *testing.T) {
	r := seeded(5)
	const n = 30000
	wins := map[string]int{}
	for range n {
		bidders := []auction.Bidder{
			{ID: "a", Bid: 700, Headroom: 1000},
			{ID: "low", Bid: 650, Headroom: 1000},
			{ID: "b", Bid: 700, Headroom: 1000},
			{ID: "c", Bid: 700, Headroom: 700},
		}
		res, ok := auction.SecondPrice(400, bidders, r)
		require.True(t, ok)
		require.Equal(t, int64(700), res.Price)
		wins[res.Winner.ID]++
	}
	assert.Zero(t, wins["low"])
	for _, id := range []string{"a", "b", "c"} {
		assert.InDelta(t, 1.0/3, float64(wins[id])/n, 0.015, id)
	}
}

// A fixed market replayed with a fixed seed: exact winners and prices.
func TestSecondPriceTable(t *testing.T) {
	b := func(id string, bid, headroom int64) auction.Bidder {
		return auction.Bidder{ID: id, Bid: bid, Headroom: headroom}
	}
	for _, c := range []struct {
		name    string
		floor   int64
		bidders []auction.Bidder
		winner  string
		price   int64
	}{
		{"pays one cent above the next-highest, never its maximum", 400,
			[]auction.Bidder{b("a", 900, 10_000), b("b", 610, 10_000), b("c", 400, 10_000)}, "a", 611},
		{"order does not matter", 400,
			[]auction.Bidder{b("c", 400, 10_000), b("b", 610, 10_000), b("a", 900, 10_000)}, "a", 611},
		{"uncontested pays the floor", 400,
			[]auction.Bidder{b("a", 900, 10_000)}, "a", 400},
		{"next-highest + 1 above the winner's bid is capped by it", 400,
			[]auction.Bidder{b("a", 611, 10_000), b("b", 610, 10_000)}, "a", 611},
		{"one cent more than a floor buyer", 400,
			[]auction.Bidder{b("floor-buyer", 400, 10_000), b("a", 450, 10_000)}, "a", 401},
		{"two floor buyers: the higher campaign floor wins by a cent", 300,
			[]auction.Bidder{b("floor-300", 300, 10_000), b("floor-600", 600, 10_000)}, "floor-600", 301},
		{"a bidder that cannot pay the floor sets no price", 400,
			[]auction.Bidder{b("a", 900, 10_000), b("under", 399, 10_000)}, "a", 400},
		{"a bidder without headroom for the floor sets no price", 400,
			[]auction.Bidder{b("a", 900, 10_000), b("broke", 850, 399)}, "a", 400},
		{"the top bidder cannot pay its price: it leaves, the next wins", 400,
			[]auction.Bidder{b("a", 900, 500), b("b", 700, 10_000), b("c", 450, 10_000)}, "b", 451},
		{"the top bidder can pay its price though not its bid", 400,
			[]auction.Bidder{b("a", 900, 701), b("b", 700, 10_000)}, "a", 701},
		{"a tie with a funded rival: the winner (drawn by the seed) pays its bid", 400,
			[]auction.Bidder{b("a", 700, 10_000), b("b", 700, 700), b("c", 500, 10_000)}, "b", 700},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, ok := auction.SecondPrice(c.floor, c.bidders, seeded(42))
			require.True(t, ok)
			assert.False(t, res.Reserved)
			assert.Equal(t, c.winner, res.Winner.ID)
			assert.Equal(t, c.price, res.Price)
			if c.name == "pays one cent above the next-highest, never its maximum" {
				assert.Less(t, res.Price, res.Winner.Bid)
			}
		})
	}
}

// A stream of 20 fills of one fixed market with seed 42: which fills are
// reserved, who wins them and at what price, exactly.
func TestDecideReplay(t *testing.T) {
	bidders := []auction.Bidder{
		{ID: "a", Bid: 900, Headroom: 1_000_000},
		{ID: "b", Bid: 610, Headroom: 1_000_000},
		{ID: "floor-buyer", Bid: 400, Headroom: 1_000_000},
	}
	r := seeded(42)
	var s auction.Stream
	var got []string
	for range 20 {
		res, ok := s.Decide(400, bidders, r)
		require.True(t, ok)
		kind := "auction"
		if res.Reserved {
			kind = "reserved"
		}
		got = append(got, fmt.Sprintf("%s %s %d", kind, res.Winner.ID, res.Price))
	}
	// Blocks of 10: positions 3, 4, 9 and then 2, 4, 8 are reserved. "a"
	// wins every auction at 611 (one cent above b's 610), and the reserved
	// fills go at the floor to whoever the draw picks, "a" included in
	// principle (it is not drawn here).
	want := []string{
		"auction a 611", "auction a 611", "auction a 611", "reserved b 400", "reserved floor-buyer 400",
		"auction a 611", "auction a 611", "auction a 611", "auction a 611", "reserved floor-buyer 400",
		"auction a 611", "auction a 611", "reserved floor-buyer 400", "auction a 611", "reserved b 400",
		"auction a 611", "auction a 611", "auction a 611", "reserved floor-buyer 400", "auction a 611",
	}
	assert.Equal(t, want, got)
}
