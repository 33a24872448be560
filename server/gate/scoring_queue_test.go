package gate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/storage"
)

// The registration's scoring job runs before the gate has a result and
// waits a minute for it (scoring_gate_pending). The gate's result then runs
// that job at once, instead of queueing a second run beside it: the app is
// scored once, by the job whose id the registration returned, and nothing
// runs again a minute later.
func TestGateResultRunsTheWaitingScoringJob(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		a := w.register(appSpec{pkg: signedApp("com.snip.app")})
		scoringJobs := func() []apps.Job {
			var out []apps.Job
			require.NoError(t, w.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
				js, err := tx.AppJobs(ctx, a.ID)
				for _, j := range js {
					if j.Kind == xpromo.JobScoring {
						out = append(out, j)
					}
				}
				return err
			}))
			return out
		}
		first := scoringJobs()
		require.Len(t, first, 1)

		// A scorer that, like the scoring job, waits for the gate's result.
		runs := 0
		scorer := &jobs.Runner[storage.Tx]{Update: w.store.Update, Now: w.clock.Now, Holder: "scorer", Backoff: []time.Duration{time.Minute, time.Minute}}
		scorer.Handle(xpromo.JobScoring, time.Minute, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			var gated bool
			if err := w.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
				js, err := tx.AppJobs(ctx, j.AppID)
				for _, g := range js {
					gated = gated || (g.Kind == xpromo.JobGate && g.Result != nil)
				}
				return err
			}); err != nil {
				return jobs.Outcome[storage.Tx]{}, err
			}
			if !gated {
				e := jobs.Transient("scoring_gate_pending", "waiting for the gate")
				e.RetryAfter = time.Minute
				return jobs.Outcome[storage.Tx]{}, e
			}
			runs++
			return jobs.Outcome[storage.Tx]{Result: json.RawMessage(`{"reputation":{"total":0,"ai_visibility":0,"cadence":0,"reviews":0,"coherence":0},"behavior":null,"reasons":[]}`)}, nil
		})
		n, err := scorer.RunDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		js := scoringJobs()
		require.Len(t, js, 1)
		assert.Equal(t, w.clock.Now().Add(time.Minute), js[0].RunAfter, "waiting for the gate")

		assert.Equal(t, 1, w.run()) // the gate records its result
		js = scoringJobs()
		require.Len(t, js, 1, "no second scoring job")
		assert.Equal(t, first[0].ID, js[0].ID)
		assert.Equal(t, xpromo.JobQueued, js[0].Status)
		assert.Equal(t, w.clock.Now(), js[0].RunAfter, "brought forward: due now")

		n, err = scorer.RunDue(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, 1, runs)
		js = scoringJobs()
		require.Len(t, js, 1)
		assert.Equal(t, xpromo.JobSucceeded, js[0].Status, "the registration's job holds the score")

		w.clock.Advance(time.Minute)
		n, err = scorer.RunDue(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "nothing runs again a minute later")
		assert.Equal(t, 1, runs)
	})
}
