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
// What a domain changes in memory after its transaction (a cache, delivery's
// counters) must describe committed state only: it registers that change with
// AfterCommit, which runs it once the unit commits, never when the unit rolls
// back, and at once outside a unit.
//
// The unit does not know the store: the store opens its transaction on the
// unit's first write (Join) and the unit ends it (Commit, Rollback). This
// package is a leaf: domain packages use it without importing storage.
package txunit

import (
	"context"
	"errors"
	"sync"
)

// Txn is the store transaction a unit holds open.
type Txn interface {
	// End commits the transaction when cause is nil, else rolls it back.
	// It returns the commit's error; retry reports a failure (of the commit,
	// or the cause) that the store would have met by running the
	// transaction again, such as a conflict: the unit's work may run again
	// from the start.
	End(cause error) (retry bool, err error)
}

// Unit is one request's unit of work. Its methods are safe for concurrent
// use, but the transaction it holds is used by one goroutine at a time (a
// request's handler).
type Unit struct {
	mu     sync.Mutex
	txn    Txn
	failed error    // the first failure of work in the unit
	ended  bool     // committed or rolled back
	after  []func() // AfterCommit hooks, in registration order
}

type unitKey struct{}

type detachedKey struct{}

// Begin returns ctx carrying a new unit, and the unit. The caller must end
// it with Commit or Rollback.
func Begin(ctx context.Context) (context.Context, *Unit) {
	u := &Unit{}
	return context.WithValue(ctx, unitKey{}, u), u
}

// From returns the unit that store transactions opened under ctx join: nil
// when ctx carries none, was detached, or its unit has ended.
func From(ctx context.Context) *Unit {
	if IsDetached(ctx) {
		return nil
	}
	u, _ := ctx.Value(unitKey{}).(*Unit)
	if u == nil || u.isEnded() {
		return nil
	}
	return u
}

// Holding reports whether ctx's unit, detached or not, holds an open
// transaction. A transaction of its own opened then may wait for that one
// (SQLite has one writer; PostgreSQL rows the unit locked), which waits for
// the request: stores refuse it rather than deadlock.
func Holding(ctx context.Context) bool {
	u, _ := ctx.Value(unitKey{}).(*Unit)
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return !u.ended && u.txn != nil
}

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

// AfterCommit runs fn once the unit of ctx commits; never if it rolls back.
// Outside a unit (none, detached, or ended) fn runs now: the transaction
// before it has committed already.
func AfterCommit(ctx context.Context, fn func()) {
	if u := From(ctx); u != nil {
		u.mu.Lock()
		if !u.ended {
			u.after = append(u.after, fn)
			u.mu.Unlock()
			return
		}
		u.mu.Unlock()
	}
	fn()
}

func (u *Unit) isEnded() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ended
}

// ErrEnded is the error of a store transaction opened in a unit that has
// ended.
var ErrEnded = errors.New("txunit: the unit of work has ended")

// Join returns the transaction the unit holds, opening it with open on the
// first call. A failure to open fails the unit.
func (u *Unit) Join(open func() (Txn, error)) (Txn, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.ended:
		return nil, ErrEnded
	case u.failed != nil:
		return nil, u.failed
	case u.txn != nil:
		return u.txn, nil
	}
	t, err := open()
	if err != nil {
		u.failed = err
		return nil, err
	}
	u.txn = t
	return t, nil
}

// Txn returns the transaction the unit holds, or nil before its first write.
func (u *Unit) Txn() Txn {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ended {
		return nil
	}
	return u.txn
}

// Fail records that work in the unit failed (a write transaction's function
// returned err): the unit can then only roll back, since its transaction
// cannot undo that work alone. The first failure is kept.
func (u *Unit) Fail(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.failed == nil {
		u.failed = err
	}
}

// Err returns the failure recorded by Fail, or nil.
func (u *Unit) Err() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.failed
}

// Commit ends the unit: it commits the transaction (if one was opened) and
// then runs the AfterCommit hooks. A unit that failed is rolled back instead
// and Commit returns its failure. retry is as for Txn.End.
func (u *Unit) Commit() (retry bool, err error) {
	u.mu.Lock()
	if u.ended {
		u.mu.Unlock()
		return false, ErrEnded
	}
	u.ended = true
	t, failed, after := u.txn, u.failed, u.after
	u.after = nil
	u.mu.Unlock()
	if t != nil {
		retry, err = t.End(failed)
	}
	if failed != nil {
		return retry, failed
	}
	if err != nil {
		return retry, err
	}
	for _, fn := range after {
		fn()
	}
	return false, nil
}

// Rollback ends the unit, rolling its transaction back; the AfterCommit
// hooks are dropped. retry reports whether the failure recorded by Fail was
// one the store retries (a conflict). Rolling back an ended unit does
// nothing.
func (u *Unit) Rollback() (retry bool) {
	u.mu.Lock()
	if u.ended {
		u.mu.Unlock()
		return false
	}
	u.ended = true
	t, failed := u.txn, u.failed
	u.after = nil
	u.mu.Unlock()
	if t == nil {
		return false
	}
	if failed == nil {
		failed = errRolledBack
	}
	retry, _ = t.End(failed)
	return retry
}

var errRolledBack = errors.New("txunit: rolled back")
