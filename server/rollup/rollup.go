// Package rollup splits a stats window between the raw facts and the daily
// rollups (docs/stats.md): the stores keep per-UTC-day sums of every fact
// the stats read, written by triggers in the transaction of each fact, so a
// window of whole days reads one row per day. A window that starts inside a
// day reads that first part of a day from the facts themselves, which bounds
// the scan by one day's traffic, not by the history behind it.
package rollup

import "time"

// Day is the UTC day of t, as its midnight.
func Day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Window is [From, To] split in two: the facts of [From, RawTo] are read
// raw when HasRaw, and the days FirstDay through LastDay (UTC, both
// included) from the rollups when HasDays. The days run to the end of To's
// day: the rollups also hold the facts of that day stamped after To, of
// which there are none when To is the clock's now (every fact is stamped by
// the same clock, at or before now).
type Window struct {
	From, RawTo       time.Time
	HasRaw, HasDays   bool
	FirstDay, LastDay time.Time
}

// Split splits [from, to]: from's day raw (up to to when both are in one
// day), the whole days after it from the rollups. A window that starts at a
// midnight reads nothing raw: its first day is whole, and read from the
// rollups like the others.
func Split(from, to time.Time) Window {
	from, to = from.UTC(), to.UTC()
	if from.Equal(Day(from)) {
		return Window{From: from, HasDays: !from.After(to), FirstDay: from, LastDay: Day(to)}
	}
	next := Day(from).AddDate(0, 0, 1)
	w := Window{From: from, HasRaw: true, RawTo: next.Add(-time.Microsecond), FirstDay: next, LastDay: Day(to)}
	if to.Before(w.RawTo) {
		w.RawTo = to
	}
	w.HasDays = !w.FirstDay.After(w.LastDay)
	return w
}

// Days is the window of the n UTC days ending with to's day (today so far
// and the n−1 days before it), as whole days: what GET /v1/network-stats
// covers, and GET /v1/stats/daily by default. It reads nothing raw.
func Days(n int, to time.Time) (from time.Time) {
	return Day(to).AddDate(0, 0, 1-n)
}
