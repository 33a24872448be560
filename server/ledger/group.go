package ledger

import (
	"context"
	"fmt"

	"github.com/xpromo/xpromo/server/detach"
	"github.com/xpromo/xpromo/server/groupcommit"
	"github.com/xpromo/xpromo/server/txunit"
)

// Group commit: concurrent calls of Ledger.Post share transactions. A
// committer goroutine takes every post that arrived while its previous
// transaction was in flight and applies them in one Apply, in arrival order,
// with one commit (one fsync) for all. A store that makes progress on
// several write transactions at once (WriteConcurrency) gets that many
// committers; they lock accounts in id order like any transaction, and a
// key two of them post at once is settled by the store's conflict retry, as
// between any two transactions. Each caller is answered only once the
// transaction holding its operation has committed (or failed).
//
// Apply already gives every operation of a batch its own outcome: one
// refused by the rules (insufficient funds, a hold resolved twice, a key
// reused) writes nothing and fails alone, and the others commit. A failure
// of the transaction as a whole (a statement the database refused, a
// commit that failed) is not pinned on anyone: the batch's operations are
// then posted again one transaction each, so only the culprit fails.
// Retrying is safe because operations are keyed: one whose first attempt
// did commit after all replays.
//
// Apply's rule for a key repeated inside one batch (the repeat replays the
// first) would differ from posting them one after the other when the first
// fails, so a batch never holds a key twice: the repeat waits for the next.
//
// Committers do not wait on each other's account locks: a batch takes
// only operations whose accounts no batch in flight holds (the others wait
// for a later batch, and so does any later operation on their accounts, so
// that each account's operations are applied in arrival order). Two batches
// in flight thus never queue on one account row (a platform shard, a
// wallet) for the other's COMMIT and WAL flush.
//
// A post under a request's unit of work (package txunit) does not join the
// committer: its operation must commit in the unit's own transaction, with
// the request's stored answer, and a transaction of the committer could
// wait for locks that unit holds. It posts directly, as PostBatch does.

// WriteConcurrency is an optional interface of a Store: how many write
// transactions make progress at once. PostgreSQL commits several at a time
// (and flushes their WAL together), so its group commit keeps that many
// shared transactions in flight; SQLite has one writer, and a Store
// without the method gets one committer.
type WriteConcurrency interface {
	WriteConcurrency() int
}

// ReadAhead is an optional interface of a Tx: ReadAhead sends, in one
// round trip, the reads Apply is about to make for ops (the operations'
// keys, their holds, the locks of their accounts in id order: the same
// statements in the same order), and hands each result to the Tx call with
// exactly the same arguments; a call with other arguments (a replayed key
// leaves its accounts out) queries as usual. PostgreSQL implements it: a
// batch then takes two round trips, the reads and the append with COMMIT,
// instead of four.
type ReadAhead interface {
	ReadAhead(ctx context.Context, ops []Operation) error
}

// readAhead sends the reads of ops' valid operations (the ones Apply reads
// for) ahead, when tx can.
func readAhead(ctx context.Context, tx Tx, ops []Operation) error {
	r, ok := tx.(ReadAhead)
	if !ok {
		return nil
	}
	valid := make([]Operation, 0, len(ops))
	for _, op := range ops {
		if validate(op) == nil {
			valid = append(valid, op)
		}
	}
	if len(valid) == 0 {
		return nil
	}
	return r.ReadAhead(ctx, valid)
}

// maxGroup bounds one shared transaction: its locks and its statements'
// size stay small, and a caller waits for at most this many others.
const maxGroup = 256

// committer is the queue of a Ledger's group commit (the machinery of
// package groupcommit's committer of units); the zero value is ready.
type committer struct {
	queue groupcommit.Queue[*posting]
	busy  map[string]int // accounts of the batches in flight, how many hold each; under the queue's lock
}

// posting is one waiting call of Post.
type posting struct {
	ctx  context.Context
	op   Operation
	res  Result
	err  error
	done chan struct{}
}

// Post applies one operation and commits it; concurrent posts share
// transactions (group commit, above). Posting a key again returns the first
// result with Replayed set, and writes nothing. Once its operation is in a
// transaction, Post waits for that transaction's outcome even if ctx is
// canceled, so that its answer always says what happened.
func (l *Ledger) Post(ctx context.Context, op Operation) (Result, error) {
	if txunit.From(ctx) != nil || txunit.Holding(ctx) {
		return l.postAlone(ctx, op)
	}
	p := &posting{ctx: ctx, op: op, done: make(chan struct{})}
	l.group.queue.Push(p, l.committers(), l.commitLoop)
	<-p.done
	return p.res, p.err
}

// Waiting reports how many posts wait for the committer to take them into
// a transaction (not those in the transaction in flight).
func (l *Ledger) Waiting() int {
	return l.group.queue.Len()
}

func (l *Ledger) committers() int {
	if w, ok := l.Store.(WriteConcurrency); ok {
		return max(1, w.WriteConcurrency())
	}
	return 1
}

// commitLoop commits batches until the queue is empty; up to committers()
// run at once, each taking what waits when its transaction has ended.
func (l *Ledger) commitLoop() {
	c := &l.group
	var ended []*posting // the last batch: its accounts are free at the next take
	for {
		// Taking nothing ends the loop: what waits (if anything) waits for
		// a batch in flight, whose committer takes it when that batch ends.
		batch := c.queue.Take(true, func(waiting []*posting) (batch, rest []*posting) {
			if c.busy == nil {
				c.busy = map[string]int{}
			}
			for _, p := range ended {
				for _, a := range p.op.Postings {
					if c.busy[a.Account]--; c.busy[a.Account] <= 0 {
						delete(c.busy, a.Account)
					}
				}
			}
			return takeBatch(waiting, c.busy)
		})
		if len(batch) == 0 {
			return
		}
		l.commitBatch(batch)
		ended = batch
	}
}

// takeBatch splits the queue into the next batch and the posts left for
// later batches, and marks the batch's accounts busy. The batch holds at
// most maxGroup posts, in arrival order, no key twice, and no post on an
// account that busy holds (a batch in flight) or that a post left for later
// touches (so each account's posts keep their arrival order); canceled
// callers are answered and dropped.
func takeBatch(queue []*posting, busy map[string]int) (batch, rest []*posting) {
	keys := map[string]bool{}
	var waiting map[string]bool // accounts of the posts left for later
	blocked := func(op Operation) bool {
		for _, p := range op.Postings {
			if busy[p.Account] > 0 || waiting[p.Account] {
				return true
			}
		}
		return false
	}
	for _, p := range queue {
		switch {
		case p.ctx.Err() != nil:
			p.err = p.ctx.Err() // never posted
			close(p.done)
		case len(batch) == maxGroup || keys[p.op.Key] || blocked(p.op):
			rest = append(rest, p)
			if waiting == nil {
				waiting = map[string]bool{}
			}
			for _, a := range p.op.Postings {
				waiting[a.Account] = true
			}
		default:
			keys[p.op.Key] = true
			batch = append(batch, p)
		}
	}
	for _, p := range batch {
		for _, a := range p.op.Postings {
			busy[a.Account]++
		}
	}
	return batch, rest
}

// commitBatch applies batch in one transaction and answers each caller.
func (l *Ledger) commitBatch(batch []*posting) {
	defer func() {
		for _, p := range batch {
			close(p.done)
		}
	}()
	// A panic (a bug) fails the posts it left without an outcome, rather
	// than the process from a goroutine no handler's recoverer watches; the
	// store rolled its transaction back on the way.
	defer func() {
		if r := recover(); r != nil {
			for _, p := range batch {
				if p.err == nil && p.res.Operation.ID == "" {
					p.err = fmt.Errorf("ledger: group commit panicked: %v", r)
				}
			}
		}
	}()
	ops := make([]Operation, len(batch))
	for i, p := range batch {
		ops[i] = p.op
	}
	// The transaction belongs to no caller: one that goes away must not roll
	// back the others. Its statements run under the first caller's values
	// and deadline (the earliest of the batch's when requests share one,
	// --request-timeout): without a deadline, a database that stopped
	// answering would keep every caller of the batch waiting with no bound
	// (issue 31).
	ctx, cancel := detach.KeepDeadline(batch[0].ctx)
	defer cancel()
	var results []Result
	var errs []error
	err := l.Store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := readAhead(ctx, tx, ops); err != nil {
			return err
		}
		var e error
		results, errs, e = Apply(ctx, tx, l.Now(), ops)
		return e
	})
	if err == nil {
		for i, p := range batch {
			p.res, p.err = results[i], errs[i]
		}
		return
	}
	if len(batch) == 1 {
		batch[0].err = err
		return
	}
	// The transaction failed as a whole and wrote nothing: post each alone,
	// in the same order, so that the failure stays with its cause.
	for _, p := range batch {
		pctx, cancel := detach.KeepDeadline(p.ctx)
		p.res, p.err = l.postAlone(pctx, p.op)
		cancel()
	}
}

// postAlone applies one operation in a transaction of its own.
func (l *Ledger) postAlone(ctx context.Context, op Operation) (Result, error) {
	var res Result
	err := l.Store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := readAhead(ctx, tx, []Operation{op}); err != nil {
			return err
		}
		results, errs, err := Apply(ctx, tx, l.Now(), []Operation{op})
		if err != nil {
			return err
		}
		if errs[0] != nil {
			return errs[0]
		}
		res = results[0]
		return nil
	})
	return res, err
}
