package assembly

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/txunit"
)

// MaxClockAdvance is the most one call may move the test clock forward.
const MaxClockAdvance = 365 * 24 * time.Hour

// MaxClockOffset is the most the test clock may be advanced in all (so that
// the stored offset, in nanoseconds, stays far inside 64 bits).
const MaxClockOffset = 100 * MaxClockAdvance

// Clock is the server's clock: the configured clock plus an offset that only
// a test-mode server can move, forward only, in the manner of Stripe's test
// clocks. Every domain's Now is this clock's, so black-box clients (the
// demo, the conformance suite) can cross the 15-minute and 48-hour marks of
// attribution without waiting.
//
// A test-mode server built by Build keeps the offset in its store
// (server/testmode): a restarted process starts where the last one was,
// and instances on one store add their advances up (an instance learns of
// another's advance when it starts, advances itself or is asked for the
// clock: Sync). NewClock alone keeps it in the process.
type Clock struct {
	base   func() time.Time
	test   bool
	offset atomic.Int64 // nanoseconds
	// store keeps the offset (nil: the process does); mu serialises the
	// advances of this process, so that offset only grows.
	store storage.Store
	mu    sync.Mutex
}

// NewClock wraps base; test enables Advance.
func NewClock(base func() time.Time, test bool) *Clock {
	if base == nil {
		base = time.Now
	}
	return &Clock{base: base, test: test}
}

// keepIn makes a test clock keep its offset in store, starting from the
// offset stored there. A live clock is never advanced and reads nothing.
func (c *Clock) keepIn(ctx context.Context, store storage.Store) error {
	if !c.test {
		return nil
	}
	stored, err := storedOffset(ctx, store)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store = store
	c.offset.Store(int64(stored))
	return nil
}

// Now is the configured clock's time plus the offset.
func (c *Clock) Now() time.Time { return c.base().Add(time.Duration(c.offset.Load())) }

// Offset is how far the clock has been advanced.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// TestMode reports whether Advance is allowed.
func (c *Clock) TestMode() bool { return c.test }

// Advance moves the clock forward by d (1 second to MaxClockAdvance) and
// returns the new time and offset. Outside test mode it fails with
// test_mode_only; a clock never moves back, since chains, holds and rate
// windows assume time only grows.
//
// A kept clock stores the new offset first, in the request's unit of work
// when there is one (so that a request replayed by its Idempotency-Key
// does not advance twice), and moves once that has committed.
func (c *Clock) Advance(ctx context.Context, d time.Duration) (time.Time, time.Duration, error) {
	if !c.test {
		return time.Time{}, 0, apperr.New(apperr.TestModeOnly, "the clock can only be advanced on a test-mode server")
	}
	if d < time.Second || d > MaxClockAdvance {
		e := apperr.New(apperr.InvalidDuration, "seconds must be an integer from 1 to %d", int64(MaxClockAdvance/time.Second))
		e.Field = "seconds"
		return time.Time{}, 0, e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Offset()+d > MaxClockOffset {
		e := apperr.New(apperr.InvalidDuration, "the test clock is already %d seconds ahead; it moves at most %d seconds in all", int64(c.Offset()/time.Second), int64(MaxClockOffset/time.Second))
		e.Field = "seconds"
		return time.Time{}, 0, e
	}
	if c.store == nil {
		total := time.Duration(c.offset.Add(int64(d)))
		return c.base().Add(total), total, nil
	}
	var total time.Duration
	err := c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		total, err = tx.AdvanceTestClock(ctx, d)
		return err
	})
	if err != nil {
		return time.Time{}, 0, err
	}
	// The stored total has other instances' advances too.
	total = max(total, c.Offset()+d)
	txunit.AfterCommit(ctx, func() { c.moveTo(total) })
	return c.base().Add(total), total, nil
}

// Sync raises a kept clock's offset to the stored one, which holds the
// advances of every instance on the store: GET /v1/admin/clock calls it,
// so a client that advanced the clock through one instance brings another
// up to date by reading its clock. A clock not kept reads nothing.
func (c *Clock) Sync(ctx context.Context) error {
	c.mu.Lock()
	store := c.store
	c.mu.Unlock()
	if !c.test || store == nil {
		return nil
	}
	stored, err := storedOffset(ctx, store)
	if err != nil {
		return err
	}
	c.moveTo(stored)
	return nil
}

// storedOffset reads the offset kept in store: the sum of every instance's
// advances.
func storedOffset(ctx context.Context, store storage.Store) (stored time.Duration, err error) {
	err = store.View(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		stored, err = tx.TestClockOffset(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reading the test clock's offset: %w", err)
	}
	return stored, nil
}

// moveTo raises the offset to total, never lowering it.
func (c *Clock) moveTo(total time.Duration) {
	for {
		cur := c.offset.Load()
		if int64(total) <= cur || c.offset.CompareAndSwap(cur, int64(total)) {
			return
		}
	}
}
