// Package testmode names what a test-mode server keeps in its store so
// that a restart continues where it was: how far its test clock has been
// advanced (POST /v1/admin/clock/advance), and the secret that seals its
// offers when none is configured. Without them a restarted test server
// would date new rows before the ones it wrote while advanced, and refuse
// the clicks and claims of offers it sealed before the restart.
//
// A live server reads and writes none of it: its clock is never advanced,
// and it refuses to start without a configured offer secret.
package testmode

import (
	"context"
	"time"
)

// Tx is the store's transaction as test mode uses it. Both stores keep one
// row (migration 00028, table test_mode).
type Tx interface {
	// TestClockOffset is how far the test clock has been advanced in all,
	// 0 when it never was.
	TestClockOffset(ctx context.Context) (time.Duration, error)
	// AdvanceTestClock adds d (> 0) to the stored offset and returns the
	// new total: instances advancing at once add up, none is lost.
	AdvanceTestClock(ctx context.Context, d time.Duration) (time.Duration, error)
	// TestOfferSecret returns the stored offer secret, storing candidate
	// first when there is none yet: the first process to start draws the
	// secret, every later one (and every restart) uses the same.
	TestOfferSecret(ctx context.Context, candidate []byte) ([]byte, error)
}
