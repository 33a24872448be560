package storage

import (
	"context"
	"errors"
	"time"

	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/txunit"
)

// Units returns s with units of work (package txunit): under a context
// carrying a unit, every Update (and InTx) joins the unit's one transaction,
// opened at the first of them and ended by the unit's Commit or Rollback;
// View reads through that transaction once it is open, so a request sees
// its own writes. Outside a unit, or under txunit.Detached, transactions
// commit on their own, as s's do. Both stores get this from one place.
//
// Inside the unit's transaction a failure cannot be retried alone: a write
// function that fails fails the unit (txunit.Unit.Fail), whose owner rolls
// it back and, on a conflict, runs its work again from the start.
func Units(s Store) Store {
	if u, ok := s.(*unitStore); ok {
		return u
	}
	return &unitStore{Store: s}
}

type unitStore struct{ Store }

// errDetachedWrite refuses a transaction of its own while the request's
// unit holds one: it could wait for the unit's locks (on SQLite, for the
// one writer connection), which wait for the request, which waits for it.
var errDetachedWrite = errors.New("storage: a detached write transaction cannot start while the request's unit of work holds one; detach before the unit's first write")

func (s *unitStore) Update(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	u := txunit.From(ctx)
	if u == nil {
		if txunit.Holding(ctx) {
			return errDetachedWrite
		}
		return s.Store.Update(ctx, fn)
	}
	t, err := u.Join(func() (txunit.Txn, error) { return s.open(ctx) })
	if err != nil {
		return err
	}
	if err := fn(ctx, t.(*held).tx); err != nil {
		u.Fail(err)
		return err
	}
	return nil
}

func (s *unitStore) InTx(ctx context.Context, fn func(ctx context.Context, tx ledger.Tx) error) error {
	return s.Update(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

func (s *unitStore) View(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	if u := txunit.From(ctx); u != nil {
		if err := u.Err(); err != nil {
			return err // the transaction may be unusable (PostgreSQL aborts it)
		}
		if t := u.Txn(); t != nil {
			return fn(ctx, t.(*held).tx)
		}
	}
	return s.Store.View(ctx, fn)
}

// held is a unit's transaction: the store's own Update, kept open by a
// goroutine until the unit ends it. Reusing Update keeps every store's
// begin, commit, rollback and conflict handling (PostgreSQL creates missing
// accounts after the rollback) exactly as for any transaction; its retry
// tells End that the failure was a conflict.
type held struct {
	tx      Tx
	end     chan error // the unit's decision: nil commits, an error rolls back
	done    chan error // Update's result
	retried bool       // Update ran its function again: a conflict; read after done
}

// errEnded stops the store's Update from running a unit's transaction a
// second time: only the unit can do that, from its start.
var errEnded = errors.New("storage: the unit's transaction has ended")

func (s *unitStore) open(ctx context.Context) (*held, error) {
	h := &held{end: make(chan error), done: make(chan error, 1)}
	ready := make(chan Tx, 1)
	// The transaction lives until the unit ends, whatever happens to the
	// request's context: a client that goes away does not roll back an
	// answer being stored. Statements still run under the caller's context.
	// The caller's deadline still bounds how long the store waits for an
	// unavailable database before the transaction opens (RetryDeadline).
	hctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		hctx = context.WithValue(hctx, retryDeadlineKey{}, dl)
	}
	go func() {
		calls := 0
		h.done <- s.Store.Update(hctx, func(_ context.Context, tx Tx) error {
			calls++
			if calls > 1 {
				h.retried = true
				return errEnded
			}
			ready <- tx
			return <-h.end
		})
	}()
	select {
	case tx := <-ready:
		h.tx = tx
		return h, nil
	case err := <-h.done:
		return nil, err
	}
}

func (h *held) End(cause error) (retry bool, err error) {
	h.end <- cause
	err = <-h.done
	if h.retried {
		return true, errConflict
	}
	if cause != nil {
		return false, nil
	}
	return false, err
}

// errConflict is a unit's commit (or failure) that the store would have
// retried.
var errConflict = errors.New("storage: the unit's transaction conflicted")

type retryDeadlineKey struct{}

// RetryDeadline is the deadline of the request a unit's transaction serves,
// which its context (detached from the request's cancellation) no longer
// carries: a store stops running a transaction again past it.
func RetryDeadline(ctx context.Context) (time.Time, bool) {
	dl, ok := ctx.Value(retryDeadlineKey{}).(time.Time)
	return dl, ok
}
