// Package jobs runs the background jobs queued in the jobs table (the
// vetting gate and the scoring of an app, docs/apps.md "Jobs").
//
// # Claims and leases
//
// A Runner claims due jobs in a short transaction of its own: queued jobs
// whose run_after has passed, and running jobs whose lease has run out. The
// claim marks each `running`, records the runner as holder and the lease's
// end (locked_until = now + the kind's time budget + LeaseGrace) and counts
// the attempt. On PostgreSQL the claim is SELECT … FOR UPDATE SKIP LOCKED, so
// any number of instances claim disjoint jobs without waiting for each other;
// on SQLite the single writer makes every claim exclusive. No transaction is
// open while a handler runs: a check that downloads for a minute holds no
// lock and no connection.
//
// Only kinds with a registered handler are claimed. A kind nobody handles
// stays queued, untouched, until a server that handles it runs.
//
// # Outcomes commit with the job
//
// A handler does its work (network, parsing) outside any transaction and
// returns an Outcome: the Result to record on the job and, optionally, an
// Apply function that writes the state change the result implies — an app's
// status transition, its history row, an outbox event, a follow-up job. The
// runner calls Apply inside the transaction that records the job's
// completion, after that transaction has re-taken the job (the claim is
// still this runner's: same holder, same attempt). So either both commit or
// neither does:
//
//   - a failing Apply rolls the whole transaction back, and the job is
//     retried as a transient failure, with nothing half-written;
//   - a runner that lost its claim (its lease ran out and another runner
//     took the job) finds out in that transaction and commits nothing: its
//     late result is dropped and the other runner's counts.
//
// Apply gets the transaction type T the Runner is instantiated with (the
// server's storage.Tx), so a handler writes through the same domain methods
// as every other operation; the store may run Apply more than once when it
// retries a conflicting transaction, so Apply must only write through tx.
//
// # Failures
//
// A handler that cannot produce an outcome returns an error. A *Error
// (Transient or Permanent) carries a stable code and a message for the app's
// owner; anything else is transient with code job_error and its text stays
// in the log. A transient failure requeues the job after the next delay of
// Backoff (30 s, 2 min, 10 min, 1 h by default); after the last one the job
// fails. A permanent failure fails the job at once. Either way the code is
// recorded (last_error) and the job shows it. A check that ran and found a
// problem is not a failure: it is an outcome that says so.
//
// # Crashes and idempotency
//
// A runner that dies mid-job leaves the job running under its lease; once
// locked_until has passed, another runner claims it and runs it again (a
// crash on the job's last allowed attempt fails it with job_lease_expired
// instead). Handlers must therefore be idempotent: running one twice must do
// no harm beyond repeating outside calls (a second challenge email is
// acceptable; a second charge is not), and Apply must be written against the
// state it reads in its transaction, not the state the handler saw. A runner
// that stops cleanly (its context ends) hands its unfinished jobs back at
// once, queued, without counting the attempt.
//
// Time budgets are wall-clock durations (context deadlines); run_after and
// leases follow the runner's clock, which in test mode the operator may move
// forward (moving it past a lease re-runs the job, as a crash would).
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
)

// Tx is what the runner needs from a transaction.
type Tx interface {
	// ClaimJobs claims up to c.Limit due jobs of kind c.Kind for c.Holder
	// (queued with run_after ≤ c.Now, or running with locked_until ≤ c.Now),
	// oldest run_after first: each becomes running with holder c.Holder,
	// locked_until c.Until and attempts + 1. It returns them as claimed.
	// Jobs locked by a concurrent claim are skipped, never waited for.
	ClaimJobs(ctx context.Context, c Claim) ([]apps.Job, error)
	// FinishJob ends the claim (f.ID, f.Holder, f.Attempt) and records f;
	// it reports false, writing nothing, when the job is no longer running
	// under that claim.
	FinishJob(ctx context.Context, f Finish) (bool, error)
}

// Claim is a request for due jobs.
type Claim struct {
	Kind       xpromo.JobKind
	Holder     string
	Now, Until time.Time
	Limit      int
}

// Finish is the end of one claim.
type Finish struct {
	// The claim: the job, its holder and the attempt it was claimed for.
	ID      string
	Holder  string
	Attempt int

	Status     xpromo.JobStatus // succeeded, failed, or queued (a retry or a hand-back)
	Result     json.RawMessage  // succeeded only
	Attempts   int              // attempts to record: Attempt, or Attempt-1 for a hand-back
	RunAfter   time.Time        // when a queued job may run again; else the job's own
	FinishedAt *time.Time       // succeeded and failed only
	LastError  string
	// LastErrorMessage goes with LastError ("" with it).
	LastErrorMessage string
}

// Outcome is what a handler produced.
type Outcome[T any] struct {
	// Result is recorded as the job's result (nil: none).
	Result json.RawMessage
	// Apply, when set, writes the state change of this outcome in the
	// transaction that completes the job.
	Apply func(ctx context.Context, tx T) error
}

// Handler runs one job. It must honour ctx (the kind's time budget) and be
// idempotent (see the package documentation).
type Handler[T any] func(ctx context.Context, job apps.Job) (Outcome[T], error)

// Defaults.
const (
	DefaultBudget      = 5 * time.Minute
	DefaultLeaseGrace  = time.Minute
	DefaultConcurrency = 4
	DefaultInterval    = 2 * time.Second
)

// DefaultBackoff is the delay before each retry of a transient failure; a
// job gets len(Backoff)+1 attempts.
var DefaultBackoff = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour}

// Runner claims and runs due jobs. Set the fields, register handlers with
// Handle, then call Run (or RunDue).
type Runner[T Tx] struct {
	// Update runs fn in a read-write transaction.
	Update func(ctx context.Context, fn func(ctx context.Context, tx T) error) error
	// Now is the clock of run_after and leases.
	Now func() time.Time
	// Holder names this runner on its claims; unique per runner.
	Holder string
	// Backoff: nil means DefaultBackoff.
	Backoff []time.Duration
	// LeaseGrace is how long past its time budget a job stays leased
	// (0: DefaultLeaseGrace): room to record the completion.
	LeaseGrace time.Duration
	// Concurrency is how many jobs run at once (0: DefaultConcurrency).
	Concurrency int
	Log         *slog.Logger

	mu    sync.RWMutex
	kinds map[xpromo.JobKind]kind[T]
}

type kind[T any] struct {
	handler Handler[T]
	budget  time.Duration
}

// Handle registers the handler of a kind, with its time budget (0:
// DefaultBudget). Jobs of that kind are claimed from the next pass on.
func (r *Runner[T]) Handle(k xpromo.JobKind, budget time.Duration, h Handler[T]) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds == nil {
		r.kinds = map[xpromo.JobKind]kind[T]{}
	}
	r.kinds[k] = kind[T]{handler: h, budget: budget}
}

// Kinds returns the kinds with a handler.
func (r *Runner[T]) Kinds() []xpromo.JobKind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]xpromo.JobKind, 0, len(r.kinds))
	for k := range r.kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (r *Runner[T]) kind(k xpromo.JobKind) (kind[T], bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.kinds[k]
	return h, ok
}

func (r *Runner[T]) now() time.Time { return r.Now().UTC().Truncate(time.Microsecond) }

func (r *Runner[T]) backoff() []time.Duration {
	if r.Backoff == nil {
		return DefaultBackoff
	}
	return r.Backoff
}

// MaxAttempts is the number of attempts a job gets.
func (r *Runner[T]) MaxAttempts() int { return len(r.backoff()) + 1 }

func (r *Runner[T]) concurrency() int {
	if r.Concurrency <= 0 {
		return DefaultConcurrency
	}
	return r.Concurrency
}

func (r *Runner[T]) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Run claims and runs due jobs until ctx ends, looking for new ones every
// interval (0: DefaultInterval) and whenever a job finishes. On the way out
// it hands back the jobs still running (queued again, the attempt not
// counted) and returns once they have stopped.
func (r *Runner[T]) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	n := r.concurrency()
	running := 0
	finished := make(chan struct{}, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		if free := n - running; free > 0 && ctx.Err() == nil {
			claimed, err := r.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				r.log().Warn("claiming jobs", slog.String("error", err.Error()))
			}
			for _, j := range claimed {
				running++
				wg.Go(func() {
					r.run(ctx, j)
					finished <- struct{}{}
				})
			}
			if len(claimed) == free {
				continue // there may be more due: fill the free slots first
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-finished:
			running--
		case <-tick.C:
		}
	}
}

// RunDue runs one pass: it claims up to Concurrency due jobs, runs them at
// once and returns when they are done, with the number it claimed.
func (r *Runner[T]) RunDue(ctx context.Context) (int, error) {
	claimed, err := r.claim(ctx, r.concurrency())
	var wg sync.WaitGroup
	for _, j := range claimed {
		wg.Go(func() { r.run(ctx, j) })
	}
	wg.Wait()
	return len(claimed), err
}

// claim claims up to limit due jobs over the registered kinds, each kind
// with a lease of its own budget.
func (r *Runner[T]) claim(ctx context.Context, limit int) ([]apps.Job, error) {
	var out []apps.Job
	for _, k := range r.Kinds() {
		if len(out) == limit {
			break
		}
		h, ok := r.kind(k)
		if !ok {
			continue
		}
		now := r.now()
		c := Claim{Kind: k, Holder: r.Holder, Now: now, Until: now.Add(h.budget + r.grace()), Limit: limit - len(out)}
		var got []apps.Job
		err := r.Update(ctx, func(ctx context.Context, tx T) (err error) {
			got, err = tx.ClaimJobs(ctx, c)
			return err
		})
		if err != nil {
			return out, fmt.Errorf("jobs: claiming %s jobs: %w", k, err)
		}
		out = append(out, got...)
	}
	return out, nil
}

func (r *Runner[T]) grace() time.Duration {
	if r.LeaseGrace <= 0 {
		return DefaultLeaseGrace
	}
	return r.LeaseGrace
}

// errLost is a completion whose claim is no longer this runner's.
var errLost = errors.New("jobs: the claim was lost (its lease ran out and another runner took the job)")

// run runs one claimed job to its recorded end.
func (r *Runner[T]) run(ctx context.Context, j apps.Job) {
	log := r.log().With(slog.String("job_id", j.ID), slog.String("kind", string(j.Kind)), slog.String("app_id", j.AppID), slog.Int("attempt", j.Attempts))
	// Recording the end must not be cut short by the shutdown that ends ctx.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()

	h, ok := r.kind(j.Kind)
	if !ok { // cannot happen: only registered kinds are claimed
		r.record(rctx, log, j, Transient(CodeError, "no handler for this kind"))
		return
	}
	if j.Attempts > r.MaxAttempts() {
		r.record(rctx, log, j, Permanent(CodeLeaseExpired, "the job's runner stopped during its last attempt"))
		return
	}

	hctx, stop := context.WithTimeout(ctx, h.budget)
	out, err := call(hctx, h.handler, j)
	timedOut := errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	stop()

	if err != nil && ctx.Err() != nil {
		r.handBack(rctx, log, j)
		return
	}
	if err == nil {
		err = r.complete(rctx, j, out)
		switch {
		case err == nil:
			log.Info("job succeeded")
			return
		case errors.Is(err, errLost):
			log.Warn("job result dropped", slog.String("error", err.Error()))
			return
		}
	}
	r.record(rctx, log, j, classify(err, timedOut))
}

// call runs the handler, turning a panic into an error.
func call[T any](ctx context.Context, h Handler[T], j apps.Job) (out Outcome[T], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("jobs: handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, j)
}

// complete records the job's success and applies its outcome, in one
// transaction.
func (r *Runner[T]) complete(ctx context.Context, j apps.Job, out Outcome[T]) error {
	return r.Update(ctx, func(ctx context.Context, tx T) error {
		now := r.now()
		ok, err := tx.FinishJob(ctx, Finish{
			ID: j.ID, Holder: j.Holder, Attempt: j.Attempts,
			Status: xpromo.JobSucceeded, Result: out.Result, Attempts: j.Attempts, RunAfter: j.RunAfter, FinishedAt: &now,
			LastError: j.LastError, LastErrorMessage: j.LastErrorMessage,
		})
		if err != nil {
			return err
		}
		if !ok {
			return errLost
		}
		if out.Apply == nil {
			return nil
		}
		return out.Apply(ctx, tx)
	})
}

// record records a failed attempt: the job is queued again after its
// backoff, or failed.
func (r *Runner[T]) record(ctx context.Context, log *slog.Logger, j apps.Job, e *Error) {
	now := r.now()
	f := Finish{
		ID: j.ID, Holder: j.Holder, Attempt: j.Attempts, Attempts: j.Attempts, RunAfter: j.RunAfter,
		LastError: e.Code, LastErrorMessage: cut(e.Message),
	}
	backoff := r.backoff()
	if e.Permanent || j.Attempts > len(backoff) {
		f.Status, f.FinishedAt = xpromo.JobFailed, &now
	} else {
		f.Status, f.RunAfter = xpromo.JobQueued, now.Add(max(backoff[j.Attempts-1], e.RetryAfter))
	}
	attrs := []any{slog.String("code", e.Code), slog.String("error", e.Error()), slog.String("status", string(f.Status))}
	if f.Status == xpromo.JobQueued {
		attrs = append(attrs, slog.Time("retry_at", f.RunAfter))
	}
	log.Warn("job attempt failed", attrs...)
	r.finish(ctx, log, f)
}

// handBack returns a job interrupted by the runner's shutdown to the queue
// at once, without counting the attempt.
func (r *Runner[T]) handBack(ctx context.Context, log *slog.Logger, j apps.Job) {
	log.Info("job handed back at shutdown")
	r.finish(ctx, log, Finish{
		ID: j.ID, Holder: j.Holder, Attempt: j.Attempts, Status: xpromo.JobQueued, Attempts: j.Attempts - 1,
		RunAfter: j.RunAfter, LastError: j.LastError, LastErrorMessage: j.LastErrorMessage,
	})
}

func (r *Runner[T]) finish(ctx context.Context, log *slog.Logger, f Finish) {
	err := r.Update(ctx, func(ctx context.Context, tx T) error {
		ok, err := tx.FinishJob(ctx, f)
		if err == nil && !ok {
			err = errLost
		}
		return err
	})
	if err != nil {
		// The lease runs out and another attempt picks the job up.
		log.Warn("recording the job's attempt", slog.String("error", err.Error()))
	}
}
