package lzfse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

func samples() map[string][]byte {
	rnd := rand.New(rand.NewSource(7))
	random := make([]byte, 100<<10)
	rnd.Read(random)
	text := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 3000))
	// Skewed bytes: FSE tables with very uneven frequencies.
	skewed := make([]byte, 70<<10)
	for i := range skewed {
		skewed[i] = byte(rnd.ExpFloat64() * 3)
	}
	mixed := append(append(append([]byte(nil), text[:40000]...), make([]byte, 90000)...), random[:50000]...)
	// Long matches and distances far back (across blocks).
	far := append(append(append([]byte(nil), random[:70000]...), make([]byte, 100)...), random[:70000]...)
	return map[string][]byte{
		"empty": {}, "one byte": {'x'}, "random": random, "text": text, "skewed": skewed,
		"zeros": make([]byte, 1<<20), "mixed": mixed, "far matches": far,
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	for name, want := range samples() {
		t.Run(name, func(t *testing.T) {
			enc := fixture.LZFSE(want)
			got := make([]byte, len(want))
			n, err := Decode(got, enc)
			if err != nil || n != len(want) || !bytes.Equal(got, want) {
				t.Fatalf("Decode = %d, %v; equal %v (%d bytes stored for %d)", n, err, bytes.Equal(got[:n], want[:n]), len(enc), len(want))
			}
			if name == "text" && !bytes.Contains(enc, []byte("bvx2")) {
				t.Fatal("the fixture did not compress text into bvx2 blocks")
			}
		})
	}
}

func TestOutputBound(t *testing.T) {
	want := samples()["text"]
	enc := fixture.LZFSE(want)
	// One byte short: refused, and nothing is written past the bound.
	buf := make([]byte, len(want))
	n, err := Decode(buf[:len(want)-1], enc)
	if !errors.Is(err, ErrOutputFull) || n > len(want)-1 {
		t.Fatalf("Decode into a short buffer = %d, %v", n, err)
	}
	if buf[len(want)-1] != 0 {
		t.Fatal("wrote past the output's bound")
	}
}

func TestStoredAndLZVNBlocks(t *testing.T) {
	le := binary.LittleEndian
	var s []byte
	s = le.AppendUint32(s, magicUncompressed)
	s = le.AppendUint32(s, 5)
	s = append(s, "hello"...)
	// An LZVN block: the literal " wor" (small literal), then "ld" and a
	// match "hello" (small distance: L=2, M=5, D=11), then end of stream.
	lz := []byte{0xe4, ' ', 'w', 'o', 'r', 2<<6 | 2<<3 | 0, 11, 'l', 'd', 0x06, 0, 0, 0, 0, 0, 0, 0}
	s = le.AppendUint32(s, magicLZVN)
	s = le.AppendUint32(s, 4+2+5)
	s = le.AppendUint32(s, uint32(len(lz)))
	s = append(s, lz...)
	s = le.AppendUint32(s, magicEnd)
	got := make([]byte, 16)
	n, err := Decode(got, s)
	if err != nil || string(got[:n]) != "hello worldhello" {
		t.Fatalf("Decode = %q, %v", got[:n], err)
	}
	// The same LZVN stream as decmpfs stores it, after 5 bytes.
	dst := make([]byte, 11)
	if n, err := DecodeLZVN(dst, lz); err == nil || n != 4+2 {
		// "hello" is not there to copy: the match reaches before the start.
		t.Fatalf("DecodeLZVN of a match before the start = %d, %v", n, err)
	}
	// A repeated byte: literal "ab", then a match of distance 1 (M=5).
	rep := []byte{2<<6 | 2<<3 | 0, 1, 'a', 'b', 0x06, 0, 0, 0, 0, 0, 0, 0}
	dst = make([]byte, 7)
	if n, err := DecodeLZVN(dst, rep); err != nil || string(dst[:n]) != "abbbbbb" {
		t.Fatalf("DecodeLZVN = %q, %v", dst[:n], err)
	}
}

func TestDamagedStreamsAreRefused(t *testing.T) {
	good := fixture.LZFSE(samples()["text"])
	out := make([]byte, len(samples()["text"]))
	le := binary.LittleEndian
	cases := map[string][]byte{
		"no end block":      good[:len(good)-4],
		"truncated":         good[:len(good)/2],
		"unknown magic":     append([]byte("bvx?"), good[4:]...),
		"huge stored block": le.AppendUint32(le.AppendUint32(nil, magicUncompressed), 0xffffffff),
		"undefined LZVN opcode": append(le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, magicLZVN), 4), 9),
			0x70, 0, 0, 0, 0x06, 0, 0, 0, 0),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(out, b); err == nil {
				t.Fatal("decoded")
			}
		})
	}
	// Every header field out of range is refused before any table is built.
	t.Run("header fields", func(t *testing.T) {
		for _, mut := range []func(b []byte){
			func(b []byte) { b[8+7] |= 0x0f },                                    // n_matches over 10 000 (bits 40-59 of v0)
			func(b []byte) { le.PutUint64(b[24:], le.Uint64(b[24:])|0x3ff<<32) }, // l_state 1023 > 63
			func(b []byte) { le.PutUint32(b[24:], 31) },                          // header size under 32
			func(b []byte) { le.PutUint32(b[24:], 5000) },                        // header size over the largest
			func(b []byte) { b[32] = 0xff; b[33] = 0xff },                        // frequencies of 1047: sums past 64
		} {
			b := append([]byte(nil), good...)
			mut(b)
			if _, err := Decode(out, b); err == nil {
				t.Fatal("a damaged header decoded")
			}
		}
	})
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"text", "skewed", "one byte", "mixed"} {
		b := samples()[name]
		f.Add(fixture.LZFSE(b[:min(len(b), 20000)]))
	}
	f.Add([]byte{0x62, 0x76, 0x78, 0x6e, 11, 0, 0, 0, 12, 0, 0, 0, 0xe4, ' ', 'w', 'o', 'r', 0x06, 0, 0, 0, 0, 0, 0, 0, 0x62, 0x76, 0x78, 0x24})
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := make([]byte, 64<<10)
		n, err := Decode(dst, b)
		if n < 0 || n > len(dst) {
			t.Fatalf("wrote %d bytes into %d", n, len(dst))
		}
		_ = err
		n, _ = DecodeLZVN(dst[:4096], b)
		if n < 0 || n > 4096 {
			t.Fatalf("LZVN wrote %d bytes into 4096", n)
		}
	})
}
