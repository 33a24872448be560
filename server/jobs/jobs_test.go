package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

var ctx = context.Background()

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

type runner = jobs.Runner[storage.Tx]

type world struct {
	store storage.Store
	clock *clocktest.Clock
	apps  *apps.Service
}

func newWorld(s storage.Store) *world {
	c := clocktest.New(t0)
	return &world{store: s, clock: c, apps: &apps.Service{
		Update: storage.Updater[apps.Tx](s), View: storage.Viewer[apps.Tx](s), Now: c.Now,
	}}
}

func (w *world) runner(holder string) *runner {
	return &runner{Update: w.store.Update, Now: w.clock.Now, Holder: holder}
}

// register registers an app and returns its gate job (registration also
// queues a scoring job).
func (w *world) register(t *testing.T) apps.Job {
	t.Helper()
	a, _, _, err := w.apps.Register(ctx, apps.RegisterParams{Name: "Snip", Platform: "mac", BundleID: "com.example.snip",
		Domain: "example.com", DownloadURL: "https://example.com/Snip.zip", ContactEmail: "dev@example.com"})
	require.NoError(t, err)
	for _, j := range w.appJobs(t, a.ID) {
		if j.Kind == xpromo.JobGate {
			return j
		}
	}
	t.Fatal("no gate job")
	return apps.Job{}
}

func (w *world) appJobs(t *testing.T, appID string) []apps.Job {
	t.Helper()
	var out []apps.Job
	require.NoError(t, w.store.View(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		out, err = tx.AppJobs(ctx, appID)
		return err
	}))
	return out
}

func (w *world) job(t *testing.T, j apps.Job) apps.Job {
	t.Helper()
	for _, got := range w.appJobs(t, j.AppID) {
		if got.ID == j.ID {
			return got
		}
	}
	t.Fatalf("job %s is gone", j.ID)
	return apps.Job{}
}

// audited returns the subjects of the audit entries with action.
func (w *world) audited(t *testing.T, action string) []string {
	t.Helper()
	var out []string
	require.NoError(t, w.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		es, err := tx.AuditPage(ctx, nil, 1000)
		for _, e := range es {
			if e.Action == action {
				out = append(out, e.Subject)
			}
		}
		return err
	}))
	return out
}

// audit is an Apply that writes an audit entry: a state change that must
// commit with the job's completion or not at all.
func audit(action, subject string, at time.Time) func(ctx context.Context, tx storage.Tx) error {
	return func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertAdminAudit(ctx, apps.AuditEntry{ID: ids.New("aud"), Actor: apps.ActorGate, Action: action, Subject: subject,
			Detail: json.RawMessage(`{}`), At: at})
	}
}

func runDue(t *testing.T, r *runner) int {
	t.Helper()
	n, err := r.RunDue(ctx)
	require.NoError(t, err)
	return n
}

var gateResult = json.RawMessage(`{"signed":true,"malware_clean":true,"domain_age_ok":true,"contact_verified":true,"bundle_match":true,"reasons":[]}`)

func TestJobRunsOnceAndOnlyHandledKinds(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)

		idle := w.runner("idle")
		assert.Equal(t, 0, runDue(t, idle), "no handler: nothing is claimed")

		r := w.runner("a")
		var calls int
		r.Handle(xpromo.JobGate, 0, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			calls++
			assert.Equal(t, gate.ID, j.ID)
			assert.Equal(t, 1, j.Attempts)
			return jobs.Outcome[storage.Tx]{Result: gateResult, Apply: audit("test.applied", j.ID, w.clock.Now())}, nil
		})
		assert.Equal(t, 1, runDue(t, r))
		assert.Equal(t, 0, runDue(t, r), "a finished job is not run again")
		assert.Equal(t, 1, calls)

		for _, j := range w.appJobs(t, gate.AppID) {
			switch j.Kind {
			case xpromo.JobGate:
				assert.Equal(t, xpromo.JobSucceeded, j.Status)
				assert.JSONEq(t, string(gateResult), string(j.Result))
				assert.Equal(t, 1, j.Attempts)
				require.NotNil(t, j.FinishedAt)
				assert.Equal(t, t0, *j.FinishedAt)
				assert.Empty(t, j.Holder)
				assert.Nil(t, j.LockedUntil)
				assert.Empty(t, j.LastError)
			case xpromo.JobScoring:
				assert.Equal(t, xpromo.JobQueued, j.Status, "a kind with no handler stays queued")
				assert.Zero(t, j.Attempts)
			}
		}
		assert.Equal(t, []string{gate.ID}, w.audited(t, "test.applied"))

		sc, err := w.apps.Score(ctx, gate.AppID)
		require.NoError(t, err)
		assert.True(t, sc.Gate.Signed)
		assert.NotContains(t, sc.Reasons, apps.ReasonGatePending)
	})
}

func TestTransientFailureRetriesOnTheSchedule(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)
		r := w.runner("a")
		r.Handle(xpromo.JobGate, 0, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			return jobs.Outcome[storage.Tx]{}, jobs.Transient("test_unavailable", "the counterpart did not answer")
		})

		start := w.clock.Now()
		for attempt, delay := range jobs.DefaultBackoff {
			require.Equal(t, 1, runDue(t, r), "attempt %d", attempt+1)
			j := w.job(t, gate)
			assert.Equal(t, xpromo.JobQueued, j.Status)
			assert.Equal(t, attempt+1, j.Attempts)
			assert.Equal(t, "test_unavailable", j.LastError)
			assert.Equal(t, "the counterpart did not answer", j.LastErrorMessage)
			assert.Equal(t, w.clock.Now().Add(delay), j.RunAfter, "attempt %d", attempt+1)
			assert.Nil(t, j.FinishedAt)

			w.clock.Advance(delay - time.Microsecond)
			assert.Equal(t, 0, runDue(t, r), "not due before its backoff")
			w.clock.Advance(time.Microsecond)
		}
		require.Equal(t, 1, runDue(t, r), "the last attempt")
		j := w.job(t, gate)
		assert.Equal(t, xpromo.JobFailed, j.Status)
		assert.Equal(t, r.MaxAttempts(), j.Attempts)
		assert.Equal(t, "test_unavailable", j.LastError)
		require.NotNil(t, j.FinishedAt)
		assert.Equal(t, start.Add(30*time.Second+2*time.Minute+10*time.Minute+time.Hour), *j.FinishedAt)

		w.clock.Advance(24 * time.Hour)
		assert.Equal(t, 0, runDue(t, r), "a failed job is not run again")

		sc, err := w.apps.Score(ctx, gate.AppID)
		require.NoError(t, err)
		assert.Contains(t, sc.Reasons, apps.ReasonGateFailed)
	})
}

func TestRetryAfterLongerThanTheBackoffWins(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)
		r := w.runner("a")
		r.Handle(xpromo.JobGate, 0, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			e := jobs.Transient("test_rate_limited", "try again in an hour")
			e.RetryAfter = time.Hour
			return jobs.Outcome[storage.Tx]{}, e
		})
		require.Equal(t, 1, runDue(t, r))
		assert.Equal(t, t0.Add(time.Hour), w.job(t, gate).RunAfter)
	})
}

func TestPermanentFailureRecordsItsCode(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)
		r := w.runner("a")
		r.Handle(xpromo.JobGate, 0, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			return jobs.Outcome[storage.Tx]{Result: gateResult, Apply: audit("test.applied", j.ID, t0)},
				jobs.Permanent("test_unreadable", "the package cannot be read")
		})
		require.Equal(t, 1, runDue(t, r))
		j := w.job(t, gate)
		assert.Equal(t, xpromo.JobFailed, j.Status)
		assert.Equal(t, 1, j.Attempts)
		assert.Equal(t, "test_unreadable", j.LastError)
		assert.Equal(t, "the package cannot be read", j.LastErrorMessage)
		assert.Nil(t, j.Result, "a failed job records no result")
		assert.Empty(t, w.audited(t, "test.applied"), "a failed job applies nothing")
		require.NotNil(t, j.FinishedAt)
	})
}

// An error the handler did not classify (and a panic) is transient, and its
// text, which may name internal hosts, stays out of the job.
func TestUnclassifiedErrorsAreTransientAndHidden(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)
		r := w.runner("a")
		panicked := false
		r.Handle(xpromo.JobGate, 0, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			if !panicked {
				panicked = true
				panic("boom")
			}
			return jobs.Outcome[storage.Tx]{}, errors.New("dial tcp 10.1.2.3:5432: connection refused")
		})
		for range 2 {
			require.Equal(t, 1, runDue(t, r))
			j := w.job(t, gate)
			assert.Equal(t, xpromo.JobQueued, j.Status)
			assert.Equal(t, jobs.CodeError, j.LastError)
			assert.NotContains(t, j.LastErrorMessage, "10.1.2.3")
			assert.NotContains(t, j.LastErrorMessage, "boom")
			w.clock.Advance(time.Hour)
		}
	})
}

func TestTimeBudget(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)
		r := w.runner("a")
		r.Handle(xpromo.JobGate, time.Millisecond, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			<-ctx.Done()
			return jobs.Outcome[storage.Tx]{}, ctx.Err()
		})
		require.Equal(t, 1, runDue(t, r))
		j := w.job(t, gate)
		assert.Equal(t, xpromo.JobQueued, j.Status)
		assert.Equal(t, jobs.CodeTimeout, j.LastError)
	})
}

// A failing Apply rolls back the job's completion with it: the job is
// retried, and neither its result nor any of Apply's writes exist.
func TestApplyCommitsWithTheCompletion(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)
		r := w.runner("a")
		fail := true
		r.Handle(xpromo.JobGate, 0, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			write := audit("test.applied", j.ID, w.clock.Now())
			return jobs.Outcome[storage.Tx]{Result: gateResult, Apply: func(ctx context.Context, tx storage.Tx) error {
				if err := write(ctx, tx); err != nil {
					return err
				}
				if fail {
					return errors.New("the status transition was refused")
				}
				return nil
			}}, nil
		})

		require.Equal(t, 1, runDue(t, r))
		j := w.job(t, gate)
		assert.Equal(t, xpromo.JobQueued, j.Status)
		assert.Equal(t, jobs.CodeError, j.LastError)
		assert.Nil(t, j.Result)
		assert.Empty(t, w.audited(t, "test.applied"), "nothing of the failed Apply is written")

		fail = false
		w.clock.Advance(jobs.DefaultBackoff[0])
		require.Equal(t, 1, runDue(t, r))
		j = w.job(t, gate)
		assert.Equal(t, xpromo.JobSucceeded, j.Status)
		assert.Equal(t, 2, j.Attempts)
		assert.JSONEq(t, string(gateResult), string(j.Result))
		assert.Equal(t, jobs.CodeError, j.LastError, "the failed attempt stays on record")
		assert.Equal(t, []string{gate.ID}, w.audited(t, "test.applied"))
	})
}

// blocking is a handler that signals it started and then hangs, ignoring
// its context, until released: a runner that crashed mid-job, as far as the
// store can tell. Once released it returns an outcome whose Apply marks the
// job as applied by holder.
type blocking struct {
	started, release chan struct{}
	holder           string
	at               time.Time
}

func newBlocking(holder string, at time.Time) *blocking {
	return &blocking{started: make(chan struct{}, 1), release: make(chan struct{}), holder: holder, at: at}
}

func (b *blocking) handle(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
	b.started <- struct{}{}
	<-b.release
	return jobs.Outcome[storage.Tx]{Result: json.RawMessage(`{"by":"` + b.holder + `"}`), Apply: audit("test.applied", b.holder, b.at)}, nil
}

func TestCrashedRunnersJobIsTakenOverAfterTheLease(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)

		a := w.runner("a")
		stuck := newBlocking("a", t0)
		a.Handle(xpromo.JobGate, time.Hour, stuck.handle)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = a.RunDue(ctx)
		}()
		<-stuck.started
		j := w.job(t, gate)
		assert.Equal(t, xpromo.JobRunning, j.Status)
		assert.Equal(t, "a", j.Holder)
		require.NotNil(t, j.LockedUntil)
		assert.Equal(t, t0.Add(time.Hour+jobs.DefaultLeaseGrace), *j.LockedUntil)

		b := w.runner("b")
		b.Handle(xpromo.JobGate, time.Hour, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			return jobs.Outcome[storage.Tx]{Result: json.RawMessage(`{"by":"b"}`), Apply: audit("test.applied", "b", t0)}, nil
		})
		assert.Equal(t, 0, runDue(t, b), "the job is leased to a")
		w.clock.Advance(time.Hour + jobs.DefaultLeaseGrace)
		require.Equal(t, 1, runDue(t, b), "a's lease ran out: b takes the job over")

		j = w.job(t, gate)
		assert.Equal(t, xpromo.JobSucceeded, j.Status)
		assert.Equal(t, 2, j.Attempts)
		assert.JSONEq(t, `{"by":"b"}`, string(j.Result))

		// a comes back to life and finishes: its claim is gone, so nothing of
		// its outcome is written.
		close(stuck.release)
		<-done
		j = w.job(t, gate)
		assert.JSONEq(t, `{"by":"b"}`, string(j.Result))
		assert.Equal(t, 2, j.Attempts)
		assert.Equal(t, []string{"b"}, w.audited(t, "test.applied"))
	})
}

func TestCrashOnTheLastAttemptFailsTheJob(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)
		a := w.runner("a")
		a.Backoff = []time.Duration{} // one attempt
		stuck := newBlocking("a", t0)
		a.Handle(xpromo.JobGate, time.Minute, stuck.handle)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = a.RunDue(ctx)
		}()
		<-stuck.started

		b := w.runner("b")
		b.Backoff = []time.Duration{}
		b.Handle(xpromo.JobGate, time.Minute, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			t.Error("the job ran again after its last attempt")
			return jobs.Outcome[storage.Tx]{}, nil
		})
		w.clock.Advance(time.Minute + jobs.DefaultLeaseGrace)
		require.Equal(t, 1, runDue(t, b))
		j := w.job(t, gate)
		assert.Equal(t, xpromo.JobFailed, j.Status)
		assert.Equal(t, jobs.CodeLeaseExpired, j.LastError)

		close(stuck.release)
		<-done
		assert.Equal(t, xpromo.JobFailed, w.job(t, gate).Status)
		assert.Empty(t, w.audited(t, "test.applied"))
	})
}

// A runner that stops cleanly hands its running job back at once, without
// counting the attempt.
func TestShutdownHandsTheJobBack(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		gate := w.register(t)
		a := w.runner("a")
		started := make(chan struct{})
		a.Handle(xpromo.JobGate, time.Hour, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			close(started)
			<-ctx.Done()
			return jobs.Outcome[storage.Tx]{}, ctx.Err()
		})
		actx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.Run(actx, time.Hour)
		}()
		<-started
		stop()
		<-done

		j := w.job(t, gate)
		assert.Equal(t, xpromo.JobQueued, j.Status)
		assert.Zero(t, j.Attempts)
		assert.Empty(t, j.Holder)
		assert.Empty(t, j.LastError)

		b := w.runner("b")
		b.Handle(xpromo.JobGate, 0, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			return jobs.Outcome[storage.Tx]{Result: gateResult}, nil
		})
		require.Equal(t, 1, runDue(t, b), "due at once, without waiting for a lease")
		assert.Equal(t, 1, w.job(t, gate).Attempts)
	})
}

// Two runners on one database, many jobs: every job runs exactly once.
func TestTwoRunnersNeverRunOneJobTwice(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(s)
		const nApps = 25
		var all []apps.Job
		for range nApps {
			g := w.register(t)
			all = append(all, w.appJobs(t, g.AppID)...)
		}
		var mu sync.Mutex
		runs := map[string]int{}
		handler := func() jobs.Handler[storage.Tx] {
			return func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
				mu.Lock()
				runs[j.ID]++
				mu.Unlock()
				return jobs.Outcome[storage.Tx]{Result: json.RawMessage(`{}`), Apply: audit("test.applied", j.ID, t0)}, nil
			}
		}
		var wg sync.WaitGroup
		for _, name := range []string{"a", "b"} {
			r := w.runner(name)
			r.Concurrency = 4
			r.Handle(xpromo.JobGate, 0, handler())
			r.Handle(xpromo.JobScoring, 0, handler())
			wg.Go(func() {
				for {
					n, err := r.RunDue(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if n == 0 {
						return
					}
				}
			})
		}
		wg.Wait()

		require.Len(t, all, 2*nApps)
		for _, j := range all {
			assert.Equal(t, 1, runs[j.ID], "job %s", j.ID)
			got := w.job(t, j)
			assert.Equal(t, xpromo.JobSucceeded, got.Status, "job %s", j.ID)
			assert.Equal(t, 1, got.Attempts, "job %s", j.ID)
		}
		assert.Len(t, w.audited(t, "test.applied"), 2*nApps)
		assert.Len(t, runs, 2*nApps, fmt.Sprint(runs))
	})
}
