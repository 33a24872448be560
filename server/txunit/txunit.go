// Package txunit marks, on a request's context, how its store transactions
// commit. A request sent with an Idempotency-Key runs as one unit: every
// write transaction it opens joins one database transaction, and the
// idempotency record's response commits in that same transaction (see
// server/idempotency and docs/limits.md), so a crash at any point either
// keeps the effect and its stored answer, or neither.
//
// Work that must commit before it calls the outside world (a payout reserves
// its amount before the provider moves money) detaches: its transactions
// then commit on their own, and it makes itself exactly-once by keying its
// effects on the request's idempotency key instead.
//
// This package is a leaf: domain packages use it without importing storage.
package txunit

import "context"

type detachedKey struct{}

// Detached returns ctx with the request's unit of work switched off: store
// transactions opened under it commit on their own.
func Detached(ctx context.Context) context.Context {
	return context.WithValue(ctx, detachedKey{}, true)
}

// IsDetached reports whether ctx was detached by Detached.
func IsDetached(ctx context.Context) bool {
	v, _ := ctx.Value(detachedKey{}).(bool)
	return v
}
