// Package detach lets work outlive its request's cancellation, but not its
// deadline.
package detach

import "context"

// KeepDeadline returns a context with ctx's values and deadline but without
// its cancellation. Work that must not stop half-way because the client went
// away (a payout whose amount is reserved, a transaction other requests
// share, an answer being stored for an Idempotency-Key) runs under it; it
// still ends by the request's deadline (--request-timeout), so the request
// answers in time (503 unavailable past it) rather than waiting, with no
// bound, on a database that went away. context.WithoutCancel alone drops
// the deadline too (issue 31: payouts unanswered within 30 s).
//
// When ctx has no deadline, neither has the result. Call cancel once the
// work is done.
func KeepDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}
