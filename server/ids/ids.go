// Package ids makes the opaque identifiers the API hands out.
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"sync"
	"time"
)

var enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// New returns prefix + "_" + 26 characters: 48 bits of wall-clock
// milliseconds then 80 random bits, so ids sort by creation (good for B-tree
// locality) and cannot be guessed. Clients must treat them as opaque.
//
// Within one process the ids are strictly increasing: an id made in the
// same millisecond as the previous one (or after the wall clock stepped
// back) takes the previous one's time and adds 1 plus 32 random bits to its
// random part. So rows written together in one transaction with one
// created_at (the events of an operation) list in the order they were made
// when sorted by (created_at, id), and the next id is still not guessable.
func New(prefix string) string {
	b := gen.next(time.Now().UnixMilli())
	return prefix + "_" + enc.EncodeToString(b[:])
}

// monotonic is the state of New: the last id's time and random part.
type monotonic struct {
	mu     sync.Mutex
	ms     uint64 // 48 bits
	hi     uint16 // random part: 16 high bits
	lo     uint64 // and 64 low bits
	inited bool
}

var gen monotonic

func (g *monotonic) next(now int64) [16]byte {
	var r [10]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	ms := uint64(now) & (1<<48 - 1)
	g.mu.Lock()
	if !g.inited || ms > g.ms {
		g.ms, g.hi, g.lo, g.inited = ms, binary.BigEndian.Uint16(r[:2]), binary.BigEndian.Uint64(r[2:]), true
	} else {
		step := 1 + uint64(binary.BigEndian.Uint32(r[:4]))
		lo := g.lo + step
		if lo < g.lo { // carry into the high 16 bits, and on into the time
			g.hi++
			if g.hi == 0 {
				g.ms++
			}
		}
		g.lo = lo
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], g.ms<<16|uint64(g.hi))
	binary.BigEndian.PutUint64(b[8:], g.lo)
	g.mu.Unlock()
	return b
}

// Derived returns prefix + "_" + 26 characters encoding the first 16 bytes
// of seed: the id of something that must be the same every time it is made
// from the same seed (an effect keyed on a request's Idempotency-Key), in
// the same shape as New's.
func Derived(prefix string, seed []byte) string {
	var b [16]byte
	copy(b[:], seed)
	return prefix + "_" + enc.EncodeToString(b[:])
}
