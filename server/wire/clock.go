package wire

import (
	"sync/atomic"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
)

// MaxClockAdvance is the most one call may move the test clock forward.
const MaxClockAdvance = 365 * 24 * time.Hour

// Clock is the server's clock: the configured clock plus an offset that only
// a test-mode server can move, forward only, in the manner of Stripe's test
// clocks. Every domain's Now is this clock's, so black-box clients (the
// demo, the conformance suite) can cross the 15-minute and 48-hour marks of
// attribution without waiting. The offset lives in the process: each
// instance of a multi-instance test deployment has its own.
type Clock struct {
	base   func() time.Time
	test   bool
	offset atomic.Int64 // nanoseconds
}

// NewClock wraps base; test enables Advance.
func NewClock(base func() time.Time, test bool) *Clock {
	if base == nil {
		base = time.Now
	}
	return &Clock{base: base, test: test}
}

// Now is the configured clock's time plus the offset.
func (c *Clock) Now() time.Time { return c.base().Add(time.Duration(c.offset.Load())) }

// Offset is how far the clock has been advanced.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// TestMode reports whether Advance is allowed.
func (c *Clock) TestMode() bool { return c.test }

// Advance moves the clock forward by d (1 second to MaxClockAdvance) and
// returns the new time. Outside test mode it fails with test_mode_only; a
// clock never moves back, since chains, holds and rate windows assume time
// only grows.
func (c *Clock) Advance(d time.Duration) (time.Time, error) {
	if !c.test {
		return time.Time{}, apperr.New(apperr.TestModeOnly, "the clock can only be advanced on a test-mode server")
	}
	if d < time.Second || d > MaxClockAdvance {
		e := apperr.New(apperr.InvalidDuration, "seconds must be an integer from 1 to %d", int64(MaxClockAdvance/time.Second))
		e.Field = "seconds"
		return time.Time{}, e
	}
	c.offset.Add(int64(d))
	return c.Now(), nil
}
