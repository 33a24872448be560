package assembly_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// The server's job loop runs the jobs registration queued once a handler
// for their kind is registered, retries on the server's clock, and the job
// endpoint and the score show each step.
func TestRunJobs(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		clock := clocktest.New(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
		// The gate's handler is replaced below by one that never records a
		// result: a gate result runs the app's queued scoring job at once
		// (apps.QueueJobSoon), which would move the retry this test watches.
		srv, err := assembly.Build(assembly.Config{Now: clock.Now, JobInterval: 5 * time.Millisecond, Gate: assembly.GateConfig{RDAPBaseURL: "https://rdap.invalid/"}}, s)
		require.NoError(t, err)
		ts := httptest.NewServer(srv.HTTP)
		t.Cleanup(ts.Close)
		chk := openapitest.New(t)
		c := xpromo.NewClient(ts.URL, xpromo.WithHTTPClient(&http.Client{Transport: chk.Transport(http.DefaultTransport)}))

		reg, err := c.RegisterApp(ctx, &xpromo.RegisterAppRequest{Name: "Snip", Platform: xpromo.PlatformMac, BundleID: "com.example.snip",
			Domain: "example.com", DownloadURL: "https://127.0.0.1/Snip.zip", ContactEmail: "dev@example.com"})
		require.NoError(t, err)
		c = c.With(xpromo.WithAPIKey(reg.APIKey))

		srv.Jobs.Handle(xpromo.JobGate, 0, func(context.Context, apps.Job) (jobs.Outcome[storage.Tx], error) {
			return jobs.Outcome[storage.Tx]{}, jobs.Transient("test_gate_waits", "the gate is not part of this test")
		})
		var mu sync.Mutex
		attempts := 0
		srv.Jobs.Handle(xpromo.JobScoring, 0, func(ctx context.Context, j apps.Job) (jobs.Outcome[storage.Tx], error) {
			mu.Lock()
			defer mu.Unlock()
			if attempts++; attempts == 1 {
				return jobs.Outcome[storage.Tx]{}, jobs.Transient("test_unavailable", "the reviews source did not answer")
			}
			res, err := json.Marshal(apps.ScoringResult{Reputation: xpromo.Reputation{Total: 42, AIVisibility: 40, Cadence: 50, Reviews: 40, Coherence: 40}, Reasons: []string{}})
			return jobs.Outcome[storage.Tx]{Result: res}, err
		})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); srv.RunJobs(runCtx) }()
		t.Cleanup(func() { stop(); <-done })

		job := func() *xpromo.Job {
			j, err := c.GetJob(ctx, reg.AppID, reg.ScoringJobID)
			require.NoError(t, err)
			return j
		}
		require.Eventually(t, func() bool { return job().Attempts == 1 && job().Status == xpromo.JobQueued }, 10*time.Second, 5*time.Millisecond)
		j := job()
		require.NotNil(t, j.LastError)
		assert.Equal(t, xpromo.JobError{Code: "test_unavailable", Message: "the reviews source did not answer"}, *j.LastError)
		assert.Equal(t, clock.Now().Add(30*time.Second), j.RunAfter)

		clock.Advance(30 * time.Second)
		require.Eventually(t, func() bool { return job().Status == xpromo.JobSucceeded }, 10*time.Second, 5*time.Millisecond)
		j = job()
		assert.Equal(t, 2, j.Attempts)
		require.NotNil(t, j.FinishedAt)

		sc, err := c.GetScore(ctx, reg.AppID)
		require.NoError(t, err)
		assert.Equal(t, 42, sc.Reputation.Total)
		assert.NotContains(t, sc.Reasons, apps.ReasonReputationPending)
	})
}
