package cli

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEUR(t *testing.T) {
	for cents, want := range map[int64]string{
		0:             "EUR 0.00",
		5:             "EUR 0.05",
		5000:          "EUR 50.00",
		123456:        "EUR 1,234.56",
		-1200:         "EUR -12.00",
		100000000:     "EUR 1,000,000.00",
		-99:           "EUR -0.99",
		math.MaxInt64: "EUR 92,233,720,368,547,758.07",
		math.MinInt64: "EUR -92,233,720,368,547,758.08",
	} {
		assert.Equal(t, want, eur(cents), "%d", cents)
	}
}

// parseEUR reads eur's output back into cents.
func parseEUR(s string) (int64, bool) {
	s, ok := strings.CutPrefix(s, "EUR ")
	if !ok {
		return 0, false
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 2 {
		return 0, false
	}
	groups := strings.Split(whole, ",")
	for i, g := range groups {
		if (i > 0 && len(g) != 3) || (i == 0 && (len(g) == 0 || len(g) > 3)) {
			return 0, false
		}
	}
	u, err := strconv.ParseUint(strings.Join(groups, "")+frac, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		if u == 0 || u > 1<<63 {
			return 0, false
		}
		return int64(-u), true // -u wraps to the right value at 1<<63
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// TestEURRoundTrip: every amount formats to a string that reads back to
// the same cents (no rounding, no lost sign, digits grouped by three).
func TestEURRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		var c int64
		switch r.IntN(3) {
		case 0:
			c = r.Int64N(20_000) - 10_000
		case 1:
			c = r.Int64N(1<<40) - 1<<39
		default:
			c = int64(r.Uint64())
		}
		got, ok := parseEUR(eur(c))
		require.True(t, ok, "%d → %q", c, eur(c))
		require.Equal(t, c, got, "%q", eur(c))
	}
}

func FuzzEUR(f *testing.F) {
	for _, c := range []int64{0, 1, -1, 99, 100, 999_99, 1000_00, math.MaxInt64, math.MinInt64} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c int64) {
		got, ok := parseEUR(eur(c))
		if !ok || got != c {
			t.Fatalf("%d → %q → %d, %v", c, eur(c), got, ok)
		}
	})
}

func TestThousands(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 12345: "12,345", 123456: "123,456", 1234567: "1,234,567"} {
		assert.Equal(t, want, thousands(n))
	}
}

func TestExitForStatus(t *testing.T) {
	for status, want := range map[int]int{
		401: ExitAuth, 403: ExitAuth, 404: ExitNotFound, 400: ExitValidation, 413: ExitValidation,
		415: ExitValidation, 422: ExitValidation, 409: ExitConflict, 402: ExitConflict, 429: ExitRateLimited,
		500: ExitServer, 502: ExitServer, 503: ExitServer, 405: ExitOther, 418: ExitOther,
	} {
		assert.Equal(t, want, exitForStatus(status), "%d", status)
	}
	// Every class is distinct.
	seen := map[int]bool{}
	for _, c := range []int{ExitOK, ExitOther, ExitUsage, ExitAuth, ExitNotFound, ExitValidation, ExitConflict, ExitRateLimited, ExitServer, ExitInterrupted} {
		assert.False(t, seen[c], "exit code %d used twice", c)
		seen[c] = true
	}
}
