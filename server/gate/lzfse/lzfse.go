// Package lzfse decodes Apple's LZFSE and LZVN compressed data within a
// caller's output bound: the chunks of a ULFO disk image (server/gate/udif)
// and HFS+ files compressed with decmpfs types 7/8 (LZVN) and 11/12
// (LZFSE).
//
// An LZFSE stream is a sequence of blocks, each opened by a four-byte magic:
// "bvx-" (stored bytes), "bvx1" (LZFSE with plain frequency tables), "bvx2"
// (LZFSE with packed tables), "bvxn" (LZVN) and "bvx$" (the end). An LZFSE
// block holds literals coded with four interleaved FSE (tANS) states, then
// (literal length, match length, distance) triples coded with three more,
// both bit streams read backwards from their ends. The format is the one of
// Apple's open-source reference (github.com/lzfse/lzfse); this is an
// independent decoder written from its description.
//
// Every input is hostile: the output never grows past len(dst) (the chunk's
// declared size), every count and state is checked against the format's
// limits before use (10 000 matches and 40 000 literals a block, states below
// their table's size, frequency tables summing to at most their state
// count), bit streams never read outside their payload, and the only
// allocations are fixed-size tables (about 50 KiB), whatever a header says.
package lzfse

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// Error is a damaged or oversized stream.
type Error struct{ Detail string }

func (e *Error) Error() string { return "lzfse: " + e.Detail }

func corrupt(detail string) error { return &Error{Detail: detail} }

// ErrOutputFull: the stream decodes to more bytes than the output holds.
var ErrOutputFull = errors.New("lzfse: the stream decodes past the output's size")

const (
	magicEnd          = 0x24787662 // bvx$
	magicUncompressed = 0x2d787662 // bvx-
	magicV1           = 0x31787662 // bvx1
	magicV2           = 0x32787662 // bvx2
	magicLZVN         = 0x6e787662 // bvxn

	lSymbols, mSymbols, dSymbols, litSymbols = 20, 20, 64, 256
	lStates, mStates, dStates, litStates     = 64, 64, 256, 1024

	maxMatches  = 10000
	maxLiterals = 4 * maxMatches

	v1HeaderSize = 772 // the C struct, padded to four bytes
	v2FixedSize  = 32  // magic, raw size, three packed 64-bit fields
	// v2 frequency tables take at most 14 bits a value.
	v2MaxHeaderSize = v2FixedSize + (lSymbols+mSymbols+dSymbols+litSymbols)*14/8 + 1
)

// The base value and extra bits of each L, M and D symbol (the format's
// tables).
var (
	lExtra = [lSymbols]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 5, 8}
	lBase  = [lSymbols]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 28, 60}
	mExtra = [mSymbols]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 5, 8, 11}
	mBase  = [mSymbols]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 56, 312}
	dExtra = [dSymbols]uint8{
		0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
		4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7,
		8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11,
		12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15}
	dBase = [dSymbols]int32{
		0, 1, 2, 3, 4, 6, 8, 10, 12, 16,
		20, 24, 28, 36, 44, 52, 60, 76, 92, 108,
		124, 156, 188, 220, 252, 316, 380, 444, 508, 636,
		764, 892, 1020, 1276, 1532, 1788, 2044, 2556, 3068, 3580,
		4092, 5116, 6140, 7164, 8188, 10236, 12284, 14332, 16380, 20476,
		24572, 28668, 32764, 40956, 49148, 57340, 65532, 81916, 98300, 114684,
		131068, 163836, 196604, 229372}
)

// header is a bvx1/bvx2 block header, unpacked.
type header struct {
	rawBytes, literals, matches  uint32
	literalPayload, lmdPayload   uint32
	literalBits, lmdBits         int
	literalState                 [4]uint16
	lState, mState, dState       uint16
	lFreq, mFreq, dFreq, litFreq []uint16
	freq                         [lSymbols + mSymbols + dSymbols + litSymbols]uint16
	headerSize                   int
}

// decoder holds one block's tables; its size is fixed.
type decoder struct {
	lit      [litStates]symbolEntry
	l        [lStates]valueEntry
	m        [mStates]valueEntry
	d        [dStates]valueEntry
	literals [maxLiterals + 4]byte
}

type symbolEntry struct {
	k      uint8
	symbol uint8
	delta  uint16
}

type valueEntry struct {
	totalBits, valueBits uint8
	delta                uint16
	base                 int32
}

// Decode decodes the LZFSE stream src into dst and returns the bytes
// written. A stream that would write more than len(dst) bytes is refused
// with ErrOutputFull; bytes after the end-of-stream block are ignored, as
// the reference decoder does.
func Decode(dst, src []byte) (int, error) {
	le := binary.LittleEndian
	var dec *decoder
	in, out := 0, 0
	for {
		if len(src)-in < 4 {
			return out, corrupt("truncated before the end-of-stream block")
		}
		switch magic := le.Uint32(src[in:]); magic {
		case magicEnd:
			return out, nil
		case magicUncompressed:
			if len(src)-in < 8 {
				return out, corrupt("truncated block header")
			}
			n := int(le.Uint32(src[in+4:]))
			in += 8
			if n > len(src)-in {
				return out, corrupt("a stored block runs past the input")
			}
			if n > len(dst)-out {
				return out, ErrOutputFull
			}
			out += copy(dst[out:], src[in:in+n])
			in += n
		case magicLZVN:
			if len(src)-in < 12 {
				return out, corrupt("truncated block header")
			}
			raw, payload := int(le.Uint32(src[in+4:])), int(le.Uint32(src[in+8:]))
			in += 12
			if payload > len(src)-in {
				return out, corrupt("an LZVN block runs past the input")
			}
			if raw > len(dst)-out {
				return out, ErrOutputFull
			}
			n, used, err := lzvn(dst[:out+raw], out, src[in:in+payload])
			if err != nil {
				return out, err
			}
			if n != out+raw || used != payload {
				return out, corrupt("an LZVN block's sizes do not match its contents")
			}
			out, in = n, in+payload
		case magicV1, magicV2:
			var h header
			var err error
			if magic == magicV2 {
				err = h.parseV2(src[in:])
			} else {
				err = h.parseV1(src[in:])
			}
			if err != nil {
				return out, err
			}
			if dec == nil {
				dec = new(decoder)
			}
			in += h.headerSize
			if int64(h.literalPayload)+int64(h.lmdPayload) > int64(len(src)-in) {
				return out, corrupt("a block's payload runs past the input")
			}
			// A block decodes to exactly the bytes its header declares (as
			// 7-Zip also requires); literals and triples that could not fit
			// in them are refused before any work, so a stream of empty
			// blocks costs no more than its bytes.
			raw := int64(h.rawBytes)
			if raw > int64(len(dst)-out) {
				return out, ErrOutputFull
			}
			if int64(h.literals) > raw+3 || int64(h.matches) > raw+1 {
				return out, corrupt("a block declares more literals or matches than its output")
			}
			litEnd := in + int(h.literalPayload)
			n, err := dec.block(&h, dst[:out+int(raw)], out, src[:litEnd], src[litEnd:litEnd+int(h.lmdPayload)])
			if err == ErrOutputFull {
				err = corrupt("a block decodes past its declared size")
			}
			if err != nil {
				return out, err
			}
			if n != out+int(raw) {
				return out, corrupt("a block decodes to fewer bytes than it declares")
			}
			out, in = n, litEnd+int(h.lmdPayload)
		default:
			return out, corrupt("unknown block magic")
		}
	}
}

func (h *header) slices() {
	h.lFreq = h.freq[:lSymbols]
	h.mFreq = h.freq[lSymbols : lSymbols+mSymbols]
	h.dFreq = h.freq[lSymbols+mSymbols : lSymbols+mSymbols+dSymbols]
	h.litFreq = h.freq[lSymbols+mSymbols+dSymbols:]
}

func (h *header) parseV1(b []byte) error {
	if len(b) < v1HeaderSize {
		return corrupt("truncated block header")
	}
	le := binary.LittleEndian
	h.rawBytes = le.Uint32(b[4:])
	// b[8:12] is the payload size, the sum of the two below, which the
	// reference decoder does not use either.
	h.literals, h.matches = le.Uint32(b[12:]), le.Uint32(b[16:])
	h.literalPayload, h.lmdPayload = le.Uint32(b[20:]), le.Uint32(b[24:])
	lb, mb := int32(le.Uint32(b[28:])), int32(le.Uint32(b[40:]))
	if lb < -7 || lb > 0 || mb < -7 || mb > 0 {
		return corrupt("bad bit counts in a block header")
	}
	h.literalBits, h.lmdBits = int(lb), int(mb)
	for i := range h.literalState {
		h.literalState[i] = le.Uint16(b[32+2*i:])
	}
	h.lState, h.mState, h.dState = le.Uint16(b[44:]), le.Uint16(b[46:]), le.Uint16(b[48:])
	for i := range h.freq {
		h.freq[i] = le.Uint16(b[50+2*i:])
	}
	h.headerSize = v1HeaderSize
	h.slices()
	return h.check()
}

func (h *header) parseV2(b []byte) error {
	if len(b) < v2FixedSize {
		return corrupt("truncated block header")
	}
	le := binary.LittleEndian
	h.rawBytes = le.Uint32(b[4:])
	v0, v1, v2 := le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
	field := func(v uint64, off, n uint) uint32 { return uint32(v>>off) & (1<<n - 1) }
	h.literals = field(v0, 0, 20)
	h.literalPayload = field(v0, 20, 20)
	h.matches = field(v0, 40, 20)
	h.literalBits = int(field(v0, 60, 3)) - 7
	for i := range h.literalState {
		h.literalState[i] = uint16(field(v1, uint(10*i), 10))
	}
	h.lmdPayload = field(v1, 40, 20)
	h.lmdBits = int(field(v1, 60, 3)) - 7
	size := uint32(v2)
	h.lState = uint16(field(v2, 32, 10))
	h.mState = uint16(field(v2, 42, 10))
	h.dState = uint16(field(v2, 52, 10))
	if size < v2FixedSize || size > v2MaxHeaderSize || int(size) > len(b) {
		return corrupt("a block header's size is out of range")
	}
	h.headerSize = int(size)
	h.slices()
	if size > v2FixedSize {
		if err := unpackFreq(h.freq[:], b[v2FixedSize:size]); err != nil {
			return err
		}
	}
	return h.check()
}

// unpackFreq reads the frequency tables of a bvx2 header: each value is a
// prefix code of 2, 3, 5, 8 or 14 bits, least significant bits first, and
// the codes must end within the last byte of the header.
func unpackFreq(freq []uint16, b []byte) error {
	// The low five bits of the accumulator select the code's length and,
	// for the short codes, its value.
	nbitsTable := [32]uint8{2, 3, 2, 5, 2, 3, 2, 8, 2, 3, 2, 5, 2, 3, 2, 14, 2, 3, 2, 5, 2, 3, 2, 8, 2, 3, 2, 5, 2, 3, 2, 14}
	valueTable := [32]uint8{0, 2, 1, 4, 0, 3, 1, 0, 0, 2, 1, 5, 0, 3, 1, 0, 0, 2, 1, 6, 0, 3, 1, 0, 0, 2, 1, 7, 0, 3, 1, 0}
	var accum uint32
	nbits, pos := 0, 0
	for i := range freq {
		for pos < len(b) && nbits+8 <= 32 {
			accum |= uint32(b[pos]) << nbits
			nbits += 8
			pos++
		}
		low := accum & 31
		n := int(nbitsTable[low])
		switch n {
		case 8:
			freq[i] = uint16(8 + (accum>>4)&0xf)
		case 14:
			freq[i] = uint16(24 + (accum>>4)&0x3ff)
		default:
			freq[i] = uint16(valueTable[low])
		}
		if n > nbits {
			return corrupt("truncated frequency tables")
		}
		accum >>= n
		nbits -= n
	}
	if nbits >= 8 || pos != len(b) {
		return corrupt("frequency tables do not end with the header")
	}
	return nil
}

// check holds the header to the format's limits.
func (h *header) check() error {
	if h.literals > maxLiterals || h.matches > maxMatches {
		return corrupt("a block declares more literals or matches than the format allows")
	}
	for _, s := range h.literalState {
		if s >= litStates {
			return corrupt("a literal state is out of range")
		}
	}
	if h.lState >= lStates || h.mState >= mStates || h.dState >= dStates {
		return corrupt("an L, M or D state is out of range")
	}
	for _, t := range []struct {
		freq   []uint16
		states int
	}{{h.lFreq, lStates}, {h.mFreq, mStates}, {h.dFreq, dStates}, {h.litFreq, litStates}} {
		sum := 0
		for _, f := range t.freq {
			sum += int(f)
		}
		if sum > t.states {
			return corrupt("a frequency table sums past its state count")
		}
	}
	return nil
}

// fseK is how many state bits a symbol of frequency f reads at most, in a
// table of n states (n a power of two, 0 < f <= n).
func fseK(f, n int) int { return bits.LeadingZeros32(uint32(f)) - bits.LeadingZeros32(uint32(n)) }

func initSymbolTable(t []symbolEntry, freq []uint16) {
	n := len(t)
	clear(t)
	pos := 0
	for sym, f16 := range freq {
		f := int(f16)
		if f == 0 {
			continue
		}
		k := fseK(f, n)
		j0 := (2*n)>>k - f
		for j := 0; j < f; j++ {
			e := symbolEntry{symbol: uint8(sym)}
			if j < j0 {
				e.k, e.delta = uint8(k), uint16((f+j)<<k-n)
			} else {
				e.k, e.delta = uint8(k-1), uint16((j-j0)<<(k-1))
			}
			t[pos] = e
			pos++
		}
	}
}

func initValueTable(t []valueEntry, freq []uint16, extra []uint8, base []int32) {
	n := len(t)
	clear(t)
	pos := 0
	for sym, f16 := range freq {
		f := int(f16)
		if f == 0 {
			continue
		}
		k := fseK(f, n)
		j0 := (2*n)>>k - f
		for j := 0; j < f; j++ {
			e := valueEntry{valueBits: extra[sym], base: base[sym]}
			if j < j0 {
				e.totalBits, e.delta = uint8(k)+extra[sym], uint16((f+j)<<k-n)
			} else {
				e.totalBits, e.delta = uint8(k-1)+extra[sym], uint16((j-j0)<<(k-1))
			}
			t[pos] = e
			pos++
		}
	}
}

// bitReader reads a bit stream backwards from the end of b[start:end]: the
// accumulator keeps 56 to 63 bits after each refill.
type bitReader struct {
	b          []byte
	start, pos int
	accum      uint64
	nbits      int
}

// init starts the stream at its end; n (-7..0) is the encoder's final bit
// count, the unused bits of the last byte.
func (r *bitReader) init(b []byte, start, end, n int) error {
	r.b, r.start, r.pos = b, start, end
	if n != 0 {
		if r.pos-8 < start {
			return corrupt("a bit stream is shorter than its header")
		}
		r.pos -= 8
		r.accum = binary.LittleEndian.Uint64(b[r.pos:])
		r.nbits = n + 64
	} else {
		if r.pos-7 < start {
			return corrupt("a bit stream is shorter than its header")
		}
		r.pos -= 7
		var w [8]byte
		copy(w[:7], b[r.pos:r.pos+7])
		r.accum = binary.LittleEndian.Uint64(w[:])
		r.nbits = 56
	}
	if r.nbits < 56 || r.nbits >= 64 || r.accum>>uint(r.nbits) != 0 {
		return corrupt("a bit stream's final bits are not zero")
	}
	return nil
}

// refill brings the accumulator back to 56..63 bits.
func (r *bitReader) refill() error {
	nb := (63 - r.nbits) &^ 7
	n := nb >> 3
	if r.pos-n < r.start {
		return corrupt("a bit stream runs past its start")
	}
	r.pos -= n
	var in uint64
	for i := n - 1; i >= 0; i-- {
		in = in<<8 | uint64(r.b[r.pos+i])
	}
	r.accum = r.accum<<uint(nb) | in
	r.nbits += nb
	return nil
}

// pull takes the next n bits (n <= 32; the tables keep n within what a
// refill leaves).
func (r *bitReader) pull(n uint8) uint32 {
	k := int(n)
	if k > r.nbits {
		k = r.nbits // unreachable with the tables built here; never panic
	}
	r.nbits -= k
	v := r.accum >> uint(r.nbits)
	r.accum &= 1<<uint(r.nbits) - 1
	return uint32(v)
}

func decodeSymbol(state *uint16, t []symbolEntry, r *bitReader) uint8 {
	e := t[int(*state)%len(t)]
	*state = e.delta + uint16(r.pull(e.k))
	return e.symbol
}

func decodeValue(state *uint16, t []valueEntry, r *bitReader) int32 {
	e := t[int(*state)%len(t)]
	v := r.pull(e.totalBits)
	*state = e.delta + uint16(v>>e.valueBits)
	return e.base + int32(v&(1<<e.valueBits-1))
}

// block decodes one LZFSE block into dst from position out: lit is the
// input up to the end of the literal payload (the literal stream is read
// backwards from there), lmd the L, M, D payload. It returns the new
// output position.
func (dec *decoder) block(h *header, dst []byte, out int, lit, lmd []byte) (int, error) {
	initSymbolTable(dec.lit[:], h.litFreq)
	initValueTable(dec.l[:], h.lFreq, lExtra[:], lBase[:])
	initValueTable(dec.m[:], h.mFreq, mExtra[:], mBase[:])
	initValueTable(dec.d[:], h.dFreq, dExtra[:], dBase[:])

	// Literals: four interleaved states, four literals per refill (40 bits
	// at most). The reference reads back to the start of the whole input.
	var r bitReader
	if err := r.init(lit, 0, len(lit), h.literalBits); err != nil {
		return out, err
	}
	st := h.literalState
	nlit := int(h.literals+3) &^ 3
	for i := 0; i < nlit; i += 4 {
		if err := r.refill(); err != nil {
			return out, err
		}
		dec.literals[i] = decodeSymbol(&st[0], dec.lit[:], &r)
		dec.literals[i+1] = decodeSymbol(&st[1], dec.lit[:], &r)
		dec.literals[i+2] = decodeSymbol(&st[2], dec.lit[:], &r)
		dec.literals[i+3] = decodeSymbol(&st[3], dec.lit[:], &r)
	}

	// L, M, D triples: one refill each (at most 14 + 17 + 23 bits).
	if err := r.init(lmd, 0, len(lmd), h.lmdBits); err != nil {
		return out, err
	}
	ls, ms, ds := h.lState, h.mState, h.dState
	litPos := 0
	d := int32(-1) // no previous distance yet
	for i := uint32(0); i < h.matches; i++ {
		if err := r.refill(); err != nil {
			return out, err
		}
		l := int(decodeValue(&ls, dec.l[:], &r))
		m := int(decodeValue(&ms, dec.m[:], &r))
		if nd := decodeValue(&ds, dec.d[:], &r); nd != 0 {
			d = nd
		}
		if l > nlit-litPos {
			return out, corrupt("a literal run past the block's literals")
		}
		if d < 0 || int(d) > out+l {
			return out, corrupt("a match distance reaches before the output's start")
		}
		if l+m > len(dst)-out {
			return out, ErrOutputFull
		}
		out += copy(dst[out:out+l], dec.literals[litPos:litPos+l])
		litPos += l
		if m > 0 {
			if d == 0 {
				return out, corrupt("a match of distance zero")
			}
			copyMatch(dst, out, int(d), m)
			out += m
		}
	}
	return out, nil
}

// copyMatch copies m bytes from d bytes back, byte by byte when the source
// overlaps the destination (a distance of 1 repeats one byte).
func copyMatch(dst []byte, out, d, m int) {
	if d >= m {
		copy(dst[out:out+m], dst[out-d:out-d+m])
		return
	}
	for i := 0; i < m; i++ {
		dst[out+i] = dst[out+i-d]
	}
}
