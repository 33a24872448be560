package main

import (
	"sync/atomic"
	"time"
)

// deviceClock is the clock of the simulated computer both apps run on.
// The story moves the server's test clock forward to cross the 10-second
// and 48-hour marks of attribution without waiting; a real computer would
// have lived through those hours, so this clock follows the server's: it is
// the local clock plus the server's lead, taken again after each advance.
// The SDK signs fill, click, claim and heartbeat times with it, and the
// server checks them against its own clock (fills and heartbeats within 2
// minutes), so without it the heartbeat after 48 hours would be refused as
// stale.
type deviceClock struct {
	lead atomic.Int64 // nanoseconds the server's clock is ahead of time.Now
}

// Now is the device's time.
func (c *deviceClock) Now() time.Time { return time.Now().Add(time.Duration(c.lead.Load())) }

// follow sets the device's time to serverNow, the server's clock as just
// read.
func (c *deviceClock) follow(serverNow time.Time) {
	c.lead.Store(int64(serverNow.Sub(time.Now())))
}
