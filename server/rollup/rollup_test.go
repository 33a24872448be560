package rollup

import (
	"testing"
	"time"
)

func TestSplit(t *testing.T) {
	at := func(s string) time.Time {
		if s == "" {
			return time.Time{}
		}
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name, from, to, rawTo, first, last string
		days                               bool
	}{
		{"from a midnight", "2026-11-24T00:00:00Z", "2026-12-01T10:30:00Z", "", "2026-11-24T00:00:00Z", "2026-12-01T00:00:00Z", true},
		{"one whole day", "2026-11-24T00:00:00Z", "2026-11-24T23:59:59.999999Z", "", "2026-11-24T00:00:00Z", "2026-11-24T00:00:00Z", true},
		{"seven days", "2026-11-24T10:30:00Z", "2026-12-01T10:30:00Z", "2026-11-24T23:59:59.999999Z", "2026-11-25T00:00:00Z", "2026-12-01T00:00:00Z", true},
		{"one day", "2026-12-01T01:00:00Z", "2026-12-01T10:30:00Z", "2026-12-01T10:30:00Z", "2026-12-02T00:00:00Z", "2026-12-01T00:00:00Z", false},
		{"to the next midnight", "2026-11-30T12:00:00Z", "2026-12-01T00:00:00Z", "2026-11-30T23:59:59.999999Z", "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z", true},
		{"another zone", "2026-11-24T10:30:00+05:00", "2026-11-24T22:00:00-05:00", "2026-11-24T23:59:59.999999Z", "2026-11-25T00:00:00Z", "2026-11-25T00:00:00Z", true},
	} {
		w := Split(at(c.from), at(c.to))
		if w.HasRaw != (c.rawTo != "") || (w.HasRaw && !w.RawTo.Equal(at(c.rawTo))) || !w.FirstDay.Equal(at(c.first)) || !w.LastDay.Equal(at(c.last)) || w.HasDays != c.days {
			t.Errorf("%s: got %+v", c.name, w)
		}
	}
}

func TestDays(t *testing.T) {
	to := time.Date(2026, 12, 1, 10, 30, 0, 0, time.FixedZone("", -5*3600)) // 15:30 UTC
	from := Days(30, to)
	if want := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC); !from.Equal(want) {
		t.Fatalf("Days(30) = %v, want %v", from, want)
	}
	if w := Split(from, to); w.HasRaw || !w.HasDays || !w.FirstDay.Equal(from) || !w.LastDay.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("Split(Days(30)) = %+v: want the 30 days whole", w)
	}
}
