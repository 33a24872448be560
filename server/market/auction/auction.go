// Package auction decides who wins one fill of a publisher's slot, and at
// what price. It is the pure engine of the marketplace: no I/O, no clock,
// no global state. Randomness is injected (Rand), so the same stream state,
// bidders and random source always give the same decisions.
//
// A stream is the inventory of one (category, platform). Its fills come in
// consecutive blocks of BlockSize; in each block exactly ReservedPerBlock
// positions, drawn from the random source when the block starts, are
// reserved: the fill goes to an eligible bidder drawn with equal chance, at
// the floor. Every other fill is a second-price auction: the highest bid
// wins and pays max(floor, min(its bid, next-highest bid + 1)), the floor
// when uncontested.
//
// Amounts are integer cents. docs/marketplace.md states the rules for people.
package auction

// BlockSize and ReservedPerBlock make the reserved share of every stream:
// exactly 3 fills of every consecutive 10 (the rate card's
// reserved_floor_share, 0.3).
const (
	BlockSize        = 10
	ReservedPerBlock = 3
)

// Rand is the injected source of randomness. *math/rand/v2.Rand satisfies it.
type Rand interface {
	// IntN returns a uniformly random int in [0, n); n > 0.
	IntN(n int) int
}

// Bidder is a campaign taking part in one decision.
type Bidder struct {
	// ID and Ref identify the bidder to the caller; the engine ignores them.
	ID  string
	Ref int
	// Bid is the most the bidder pays for this fill: its max_bid_cents, or
	// for a floor buyer its campaign floor.
	Bid int64
	// Headroom is the most the bidder can be charged now: the least of what
	// is left of its daily budget (and cap) and what its wallet holds. A
	// bidder is eligible at price p only when Headroom ≥ p.
	Headroom int64
}

// eligibleAt reports whether b can be awarded a fill at price p: it bids at
// least p and can be charged p.
func (b Bidder) eligibleAt(p int64) bool { return b.Bid >= p && b.Headroom >= p }

// Result is the outcome of one decision.
type Result struct {
	Winner   Bidder
	Price    int64
	Reserved bool // a reserved fill: floor allocation, Price == floor
}

// Stream is the reservation schedule of one (category, platform) stream:
// where the current block of BlockSize fills stands and which of its
// positions are reserved. The zero value is a stream about to start a
// block. A Stream is not safe for concurrent use; the caller serialises the
// decisions of one stream.
type Stream struct {
	pos      int    // fills made in the current block, 0..BlockSize-1
	reserved uint16 // bit i: position i of the current block is reserved
}

// Position returns how many fills of the current block have been made.
func (s *Stream) Position() int { return s.pos }

// next advances the schedule by one fill and reports whether that fill is
// reserved. At the start of a block it draws the block's reserved positions.
func (s *Stream) next(rng Rand) bool {
	if s.pos == 0 {
		s.reserved = drawPositions(rng)
	}
	r := s.reserved&(1<<s.pos) != 0
	s.pos = (s.pos + 1) % BlockSize
	return r
}

// drawPositions picks ReservedPerBlock distinct positions of [0, BlockSize)
// uniformly (a partial Fisher–Yates shuffle), as a bit set.
func drawPositions(rng Rand) uint16 {
	var p [BlockSize]int
	for i := range p {
		p[i] = i
	}
	var set uint16
	for i := range ReservedPerBlock {
		j := i + rng.IntN(BlockSize-i)
		p[i], p[j] = p[j], p[i]
		set |= 1 << p[i]
	}
	return set
}

// Decide makes one fill of the stream. It returns ok == false, leaving the
// schedule untouched, when no bidder is eligible at floor (a fill that is
// not made does not use a position). Otherwise the fill takes the next
// position of the schedule: reserved positions go to FloorAllocation, the
// others to SecondPrice.
//
// Decide may reorder bidders (see SecondPrice); the result names the winner.
func (s *Stream) Decide(floor int64, bidders []Bidder, rng Rand) (Result, bool) {
	if !anyEligible(floor, bidders) {
		return Result{}, false
	}
	if s.next(rng) {
		return FloorAllocation(floor, bidders, rng)
	}
	return SecondPrice(floor, bidders, rng)
}

func anyEligible(floor int64, bidders []Bidder) bool {
	for _, b := range bidders {
		if b.eligibleAt(floor) {
			return true
		}
	}
	return false
}

// FloorAllocation is a reserved fill: every bidder eligible at floor is
// equally likely to win, whatever its bid, and pays floor. ok is false when
// none is eligible.
func FloorAllocation(floor int64, bidders []Bidder, rng Rand) (Result, bool) {
	n := 0
	for _, b := range bidders {
		if b.eligibleAt(floor) {
			n++
		}
	}
	if n == 0 {
		return Result{}, false
	}
	k := rng.IntN(n)
	for _, b := range bidders {
		if !b.eligibleAt(floor) {
			continue
		}
		if k == 0 {
			return Result{Winner: b, Price: floor, Reserved: true}, true
		}
		k--
	}
	panic("unreachable")
}

// SecondPrice is an auctioned fill among the bidders eligible at floor. The
// highest bid wins; equal highest bids are broken by rng, each equally
// likely. The winner pays
//
//	max(floor, min(its bid, next-highest bid + 1))
//
// where the next-highest bid is the highest among the other bidders still
// in the auction (equal to the winner's own bid on a tie), and pays floor
// when it is alone. A winner whose headroom is below that price is not
// eligible: it leaves the auction, and the auction is decided again among
// the others, so its bid sets no one's price. Since the last bidder left
// pays floor, the auction always has a winner when anyone is eligible at
// floor. ok is false when no one is.
//
// The price is never above the winner's bid nor below floor, and a winner
// with a higher bid than everyone else pays one cent above the next-highest
// bid, never its whole bid.
//
// Bidders that leave are moved to the end of the slice (that is how the
// engine remembers them without allocating), so the caller's slice may be
// reordered.
func SecondPrice(floor int64, bidders []Bidder, rng Rand) (Result, bool) {
	in := bidders
	for {
		w, next, ok := highest(floor, in, rng)
		if !ok {
			return Result{}, false
		}
		price := floor
		if next >= 0 {
			price = max(floor, min(in[w].Bid, next+1))
		}
		if in[w].Headroom >= price {
			return Result{Winner: in[w], Price: price}, true
		}
		last := len(in) - 1
		in[w], in[last] = in[last], in[w]
		in = in[:last]
	}
}

// highest finds, among the bidders eligible at floor, the index of the
// highest bid (ties drawn uniformly with rng, by reservoir sampling) and the
// next-highest bid among the others: the same value on a tie, -1 when the
// winner is alone.
func highest(floor int64, bidders []Bidder, rng Rand) (w int, next int64, ok bool) {
	best, next, ties := int64(-1), int64(-1), 0
	w = -1
	for i, b := range bidders {
		if !b.eligibleAt(floor) {
			continue
		}
		switch {
		case b.Bid > best:
			next, best, ties, w = best, b.Bid, 1, i
		case b.Bid == best:
			next = best
			ties++
			if rng.IntN(ties) == 0 {
				w = i
			}
		case b.Bid > next:
			next = b.Bid
		}
	}
	return w, next, w >= 0
}
