// Package groupcommit runs concurrent units of work in shared database
// transactions, each unit inside its own savepoint, so that many units
// commit with one COMMIT (on SQLite: one fsync for many claims).
//
// A unit is a store write function, fn(ctx, tx), as given to a store's
// Update: the stores already run such a function again after a conflict, so
// it must be safe to run more than once, with only its last run counting.
// That is what makes the sharing safe:
//
//   - A committer takes the first waiting unit, begins a transaction, and
//     runs the units that wait, one after the other, each between SAVEPOINT
//     and RELEASE SAVEPOINT (the release carries the unit's held-back
//     statements, so a failure of any of its statements is its own).
//   - A unit that fails is rolled back to its savepoint: nothing of it
//     stays, and the others go on.
//   - No unit is answered before the shared COMMIT has succeeded, success
//     and failure alike (a refusal may have read what an earlier unit of the
//     batch wrote).
//   - If anything shared fails (BEGIN, a savepoint that cannot be rolled
//     back to, the COMMIT), no unit of the batch is answered success: when
//     the database certainly wrote nothing, each unit runs again alone, in a
//     transaction of its own (the store's Update, with its retries); when
//     the outcome is unknown (the connection broke during COMMIT), each is
//     answered the error, as a lone transaction's caller would be.
//   - A unit that lost a race (a conflict, a deadlock, a serialization
//     failure, accounts to create first) also runs again alone, once the
//     batch has ended.
//
// Each unit is answered exactly once, by the goroutine that asked (Do).
//
// The waiting and the committer goroutines are a Queue, which the ledger's
// group commit of posts (ledger.Post) uses too.
//
// A unit joins only if its context allows it (Allow): the caller vouches
// that fn uses nothing but its transaction (no second transaction, no
// Ledger.Post, no wait for another request), takes no SKIP LOCKED claim
// (rows the batch's earlier units locked are not locked against it) and no
// transaction-level advisory lock it needs released early.
package groupcommit

import (
	"context"
	"errors"
	"fmt"

	"github.com/xpromo/xpromo/server/detach"
)

// Config tunes a store's group commit.
type Config struct {
	// Off runs every unit in a transaction of its own.
	Off bool
	// MaxBatch bounds the units of one shared transaction: its locks, and
	// how long the first unit waits for the last.
	MaxBatch int
	// InFlight is how many shared transactions run at once. SQLite has one
	// writer (1); PostgreSQL overlaps one batch's round trips and WAL flush
	// with the others'.
	InFlight int
	// BeforeCommit, for tests only, is called before each shared COMMIT; an
	// error fails the batch as a COMMIT the database refused would.
	BeforeCommit func() error
}

// Shared is a store transaction that several units share.
type Shared[T any] interface {
	// Tx is the transaction the units' functions are given.
	Tx() T
	// Savepoint starts a unit. (A store may send it with the unit's first
	// statement.)
	Savepoint(ctx context.Context) error
	// Release ends a unit that succeeded; its error is the unit's (a held-back
	// statement that failed), and the unit must then be rolled back.
	Release(ctx context.Context) error
	// RollbackTo undoes the unit that failed with cause; an error means the
	// shared transaction is unusable.
	RollbackTo(ctx context.Context, cause error) error
	// Commit commits the shared transaction; Rollback abandons it.
	Commit(ctx context.Context) error
	Rollback(ctx context.Context)
}

// Store is what a committer needs of its store.
type Store[T any] struct {
	// Begin opens a shared transaction.
	Begin func(ctx context.Context) (Shared[T], error)
	// Alone runs fn in a transaction of its own, with the store's retries.
	Alone func(ctx context.Context, fn func(ctx context.Context, tx T) error) error
	// Retryable reports a unit's failure that running it again may cure.
	Retryable func(err error) bool
	// Unknown reports a COMMIT failure after which the database may have
	// committed (the connection broke).
	Unknown func(err error) bool
}

// Committer queues units and runs them in shared transactions. Create it
// with New; a nil Committer runs every unit alone.
type Committer[T any] struct {
	cfg   Config
	store Store[T]
	queue Queue[*unit[T]]
}

type unit[T any] struct {
	ctx   context.Context
	fn    func(ctx context.Context, tx T) error
	err   error
	again bool // run alone once the batch has ended
	done  chan struct{}
}

// Defaults for a Config's zero fields.
const (
	DefaultMaxBatch = 64
	DefaultInFlight = 1
)

// New returns a committer for store.
func New[T any](cfg Config, store Store[T]) *Committer[T] {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = DefaultInFlight
	}
	return &Committer[T]{cfg: cfg, store: store}
}

type allowKey struct{}

// Allow returns ctx marking its store writes as units that may share a
// transaction (see the package comment for what the caller vouches).
func Allow(ctx context.Context) context.Context {
	return context.WithValue(ctx, allowKey{}, true)
}

// Allowed reports whether ctx was marked by Allow.
func Allowed(ctx context.Context) bool {
	v, _ := ctx.Value(allowKey{}).(bool)
	return v
}

// Do runs fn as a unit: in a shared transaction when ctx allows it and the
// committer is on, else alone. It returns once the unit's outcome is
// certain: nil only after a COMMIT holding it succeeded. Once its unit has
// begun, Do waits for the outcome even if ctx is canceled.
func (c *Committer[T]) Do(ctx context.Context, fn func(ctx context.Context, tx T) error) error {
	if c == nil || c.cfg.Off || !Allowed(ctx) {
		return c.store.Alone(ctx, fn)
	}
	u := &unit[T]{ctx: ctx, fn: fn, done: make(chan struct{})}
	c.queue.Push(u, c.cfg.InFlight, c.loop)
	<-u.done
	if u.again {
		// Nothing of it was written: alone, it runs on if ctx is canceled,
		// but not past ctx's deadline (issue 31).
		actx, cancel := detach.KeepDeadline(ctx)
		defer cancel()
		return c.store.Alone(actx, fn)
	}
	return u.err
}

// next takes the first waiting unit (nil if none), answering the canceled
// ones that never ran; with last, a nil ends the calling loop (Queue.Take).
func (c *Committer[T]) next(last bool) *unit[T] {
	taken := c.queue.Take(last, func(waiting []*unit[T]) (taken, rest []*unit[T]) {
		for i, u := range waiting {
			waiting[i] = nil // not kept alive by the queue's array
			if err := u.ctx.Err(); err != nil {
				u.err = err // never ran
				close(u.done)
				continue
			}
			return []*unit[T]{u}, waiting[i+1:]
		}
		return nil, nil
	})
	if len(taken) == 0 {
		return nil
	}
	return taken[0]
}

// loop runs batches until the queue is empty.
func (c *Committer[T]) loop() {
	for {
		first := c.next(true)
		if first == nil {
			return
		}
		c.batch(first)
	}
}

// batch runs first and whatever waits behind it in one shared transaction,
// and answers them.
func (c *Committer[T]) batch(first *unit[T]) {
	var ran []*unit[T]
	answered := false
	answer := func() {
		answered = true
		for _, u := range ran {
			close(u.done)
		}
	}
	// A panic (a bug in the committer or the store) must not leave callers
	// waiting forever: each runs alone then, as after a failed COMMIT.
	defer func() {
		if r := recover(); r != nil && !answered {
			for _, u := range ran {
				u.err, u.again = nil, true
			}
			answer()
		}
	}()
	// The transaction belongs to no caller: one that goes away must not roll
	// back the others. It keeps the first caller's deadline, the earliest
	// of the batch's in a server whose requests share one
	// (--request-timeout): without it, a database that stopped answering
	// would keep every caller of the batch waiting with no bound (issue 31).
	// Cut off, the batch's units run alone (before COMMIT) or answer
	// unknown (COMMIT sent).
	ctx, cancel := detach.KeepDeadline(first.ctx)
	defer cancel()
	sh, err := c.store.Begin(ctx)
	if err != nil {
		first.again = true
		ran = append(ran, first)
		answer()
		return
	}
	broken := false
	for u := first; u != nil; {
		ran = append(ran, u)
		if err := c.run(ctx, sh, u); err != nil {
			broken = true
			break
		}
		if len(ran) == c.cfg.MaxBatch {
			break
		}
		u = c.next(false)
	}
	if !broken && c.cfg.BeforeCommit != nil {
		if err := c.cfg.BeforeCommit(); err != nil {
			broken = true
		}
	}
	if broken {
		sh.Rollback(ctx)
		for _, u := range ran {
			u.err, u.again = nil, true // nothing of the batch was written
		}
		answer()
		return
	}
	if err := sh.Commit(ctx); err != nil {
		sh.Rollback(ctx)
		unknown := c.store.Unknown(err)
		for _, u := range ran {
			if unknown {
				u.err, u.again = fmt.Errorf("groupcommit: the shared commit failed, outcome unknown: %w", err), false
			} else {
				u.err, u.again = nil, true
			}
		}
	}
	answer()
}

// run runs one unit in its savepoint. Its outcome goes to u; the error
// returned is the shared transaction's: the batch cannot go on.
func (c *Committer[T]) run(ctx context.Context, sh Shared[T], u *unit[T]) error {
	if err := sh.Savepoint(ctx); err != nil {
		return err
	}
	err := call(context.WithoutCancel(u.ctx), sh.Tx(), u.fn)
	if err == nil {
		err = sh.Release(ctx)
	}
	if err == nil {
		return nil
	}
	if rerr := sh.RollbackTo(ctx, err); rerr != nil {
		return rerr
	}
	u.err = err
	u.again = c.store.Retryable(err)
	return nil
}

// call runs fn, turning a panic into the unit's error (after which its
// savepoint is rolled back like any failure's).
func call[T any](ctx context.Context, tx T, fn func(ctx context.Context, tx T) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPanicked, r)
		}
	}()
	return fn(ctx, tx)
}

// ErrPanicked is the error of a unit whose function panicked.
var ErrPanicked = errors.New("groupcommit: the unit panicked")
