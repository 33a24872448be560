// Package clocktest is the manual clock of the server's tests: a test starts
// it at a fixed moment and moves it by hand, and the code under test reads it
// through its injected Now func() time.Time. It is not the server's test-mode
// clock (wire.Clock), which offsets a real clock for black-box clients.
package clocktest

import (
	"sync/atomic"
	"time"
)

// Clock is a clock that moves only when told to. It is safe for concurrent
// use: servers under test read it from their own goroutines while the test
// advances it. Its times are in UTC.
type Clock struct{ ns atomic.Int64 } // Unix nanoseconds

// New returns a clock standing at start.
func New(start time.Time) *Clock {
	c := &Clock{}
	c.ns.Store(start.UnixNano())
	return c
}

// Now returns the clock's time; pass the method value (c.Now) as a
// service's Now.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Advance moves the clock forward by d (back, for a negative d).
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
