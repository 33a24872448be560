// Package memtest is what the bomb tests of the server's parsers share: the
// classic hostile JSON texts (deep, wide, long key, huge) and a measure of
// how much a call allocates, so a test can state the bound a parser's memory
// stays under. Tests only.
package memtest

import (
	"runtime"
	"strings"
	"testing"
)

// Allocated runs f once and returns the bytes the process allocated while it
// ran (runtime.MemStats.TotalAlloc, after a GC before the call): an upper
// bound on how far the heap grew, since freed bytes count too. Anything else
// the process runs meanwhile counts as well, which only makes the bound
// stricter. It measures bytes, never time.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Under runs f and fails t if it allocated more than limit bytes.
func Under(t testing.TB, limit uint64, what string, f func()) {
	t.Helper()
	if n := Allocated(f); n > limit {
		t.Errorf("%s: allocated %d bytes, more than the bound of %d", what, n, limit)
	}
}

// A Bomb is a hostile text of one class.
type Bomb struct {
	Class string // "deep", "wide", "long key", "huge"
	Text  []byte
}

// JSONBombs returns one bomb of each class for a parser that reads at most
// maxBytes (at least 64 KiB): deep (arrays nested 100,000 levels, cut to
// maxBytes), wide (a flat array of 250,001 values, more than
// jsonbound.Answer allows, or too large below 512 KiB), a long key (2 KiB,
// longer than either jsonbound limit allows), and huge (a valid object one
// byte longer than maxBytes).
func JSONBombs(maxBytes int) []Bomb {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	wide := "[" + strings.Repeat("0,", 250_000) + "0]"
	long := `{"` + strings.Repeat("k", 2<<10) + `":1}`
	huge := `{"a":"` + strings.Repeat("x", maxBytes) + `"}`
	cut := func(s string) []byte {
		if len(s) > maxBytes {
			s = s[:maxBytes]
		}
		return []byte(s)
	}
	return []Bomb{
		{"deep", cut(deep)},
		{"wide", []byte(wide)},
		{"long key", cut(long)},
		{"huge", []byte(huge)},
	}
}
