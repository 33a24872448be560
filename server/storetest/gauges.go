package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/gauges"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/webhooks"
)

// Gauges runs the suite of the operator's backlog figures (gauges.Tx) on a
// fresh store from newStore: the sqlite and postgres packages call it from
// their tests.
func Gauges(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("Empty", func(t *testing.T) { testGaugesEmpty(t, newStore(t)) })
	t.Run("Figures", func(t *testing.T) { testGaugesFigures(t, newStore(t)) })
}

func readGauges(t *testing.T, s storage.Store, now time.Time) gauges.Figures {
	t.Helper()
	f, err := gauges.Read(context.Background(), storage.Viewer[gauges.Tx](s), now)
	require.NoError(t, err)
	return f
}

func testGaugesEmpty(t *testing.T, s storage.Store) {
	f := readGauges(t, s, whStart)
	assert.Equal(t, gauges.Figures{At: whStart, RunnableJobs: map[xpromo.JobKind]gauges.Backlog{}}, f, "an empty store has no backlog")
}

func testGaugesFigures(t *testing.T, s storage.Store) {
	now := whStart.Add(100 * time.Hour)
	for _, id := range []string{"app_1", "app_2", "app_3", "app_4"} {
		whApp(t, s, id)
	}

	// Three pending payouts (one per app, the most there can be) and a
	// failed one, which is final.
	for i, app := range []string{"app_1", "app_2", "app_3", "app_4"} {
		at := now.Add(-time.Duration(10*(i+1)) * time.Minute)
		p := payments.Payout{ID: fmt.Sprintf("po_%d", i), AppID: app, AmountCents: 5000, Destination: "acct_test",
			Status: payments.PayoutPending, CreatedAt: at, UpdatedAt: at}
		update(t, s, func(ctx context.Context, tx storage.Tx) error {
			if ok, err := tx.InsertPayout(ctx, p); err != nil || !ok {
				return fmt.Errorf("insert %s: %v %w", p.ID, ok, err)
			}
			if app != "app_4" {
				return nil
			}
			p.Status, p.Failure, p.UpdatedAt = payments.PayoutFailed, "refused", now
			return tx.FinishPayout(ctx, p)
		})
	}

	// Three events, the oldest dispatched; two deliveries, one due.
	evs := whEvents(t, s, "app_1", xpromo.EventScoreUpdated, 1, now.Add(-3*time.Hour))
	evs = append(evs, whEvents(t, s, "app_1", xpromo.EventScoreUpdated, 2, now.Add(-2*time.Hour))...)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.ClaimUndispatched(ctx, now.Add(-time.Hour), 1)
		require.Len(t, got, 1)
		return err
	})
	whEndpoint(t, s, "we_1", "app_1", xpromo.EventScoreUpdated)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertDeliveries(ctx, []webhooks.Delivery{
			{EndpointID: "we_1", EventID: evs[0].ID, AppID: "app_1", EventCreatedAt: evs[0].CreatedAt, NextAttemptAt: now.Add(-5 * time.Minute)},
			{EndpointID: "we_1", EventID: evs[1].ID, AppID: "app_1", EventCreatedAt: evs[1].CreatedAt, NextAttemptAt: now.Add(time.Minute)},
		})
	})

	// Jobs: a runnable scoring job, one not yet due, a gate job whose
	// runner's lease ran out, and a finished one.
	job := func(id, app string, kind xpromo.JobKind, status xpromo.JobStatus, runAfter time.Time) apps.Job {
		return apps.Job{ID: id, AppID: app, Kind: kind, Status: status, CreatedAt: runAfter, RunAfter: runAfter}
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for _, j := range []apps.Job{
			job("job_1", "app_1", xpromo.JobScoring, xpromo.JobQueued, now.Add(-7*time.Minute)),
			job("job_2", "app_2", xpromo.JobScoring, xpromo.JobQueued, now.Add(time.Hour)),
			job("job_3", "app_3", xpromo.JobGate, xpromo.JobQueued, now.Add(-time.Hour)),
			job("job_4", "app_4", xpromo.JobGate, xpromo.JobSucceeded, now.Add(-2*time.Hour)),
		} {
			if err := tx.InsertJob(ctx, j); err != nil {
				return err
			}
		}
		claimed, err := tx.ClaimJobs(ctx, jobs.Claim{Kind: xpromo.JobGate, Holder: "runner_dead", Now: now.Add(-50 * time.Minute), Until: now.Add(-30 * time.Minute), Limit: 10})
		require.Len(t, claimed, 1)
		return err
	})

	// Chains: one activated (due at once), one whose window closed an hour
	// ago, one still in its window, one cleared.
	chain := func(id string, state attribution.State, installed, activated time.Time) attribution.Chain {
		return attribution.Chain{ID: id, Nonce: "n" + id, State: state, CampaignID: "cmp_1", PublisherAppID: "app_1",
			AdvertiserAppID: "app_2", Platform: xpromo.PlatformMac, ClickToken: "tok." + id, PriceCents: 100,
			ClickedAt: installed, InstalledAt: installed, ActivatedAt: activated, CreatedAt: installed, UpdatedAt: installed}
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for _, c := range []attribution.Chain{
			chain("ch_1", attribution.StateActivated, now.Add(-60*time.Hour), now.Add(-10*time.Minute)),
			chain("ch_2", attribution.StateInstalled, now.Add(-attribution.ActivationWindowEnd-time.Hour), time.Time{}),
			chain("ch_3", attribution.StateInstalled, now.Add(-10*time.Hour), time.Time{}),
			func() attribution.Chain {
				c := chain("ch_4", attribution.StateCleared, now.Add(-90*time.Hour), now.Add(-40*time.Hour))
				c.ResolvedAt = now.Add(-39 * time.Hour)
				return c
			}(),
		} {
			if ok, err := tx.InsertChain(ctx, c); err != nil || !ok {
				return fmt.Errorf("insert %s: %v %w", c.ID, ok, err)
			}
		}
		return nil
	})

	f := readGauges(t, s, now)
	assert.Equal(t, gauges.Backlog{Count: 3, Oldest: now.Add(-30 * time.Minute)}, f.PendingPayouts, "the failed payout is final")
	assert.Equal(t, gauges.Backlog{Count: 2, Oldest: evs[1].CreatedAt}, f.UndispatchedEvents, "the dispatched event is not waiting")
	assert.Equal(t, gauges.Backlog{Count: 1, Oldest: now.Add(-5 * time.Minute)}, f.DueWebhookDeliveries, "the delivery not yet due is not counted")
	assert.Equal(t, map[xpromo.JobKind]gauges.Backlog{
		xpromo.JobScoring: {Count: 1, Oldest: now.Add(-7 * time.Minute)},
		xpromo.JobGate:    {Count: 1, Oldest: now.Add(-30 * time.Minute)}, // its lease ran out then
	}, f.RunnableJobs)
	assert.Equal(t, gauges.Backlog{Count: 2, Oldest: now.Add(-time.Hour)}, f.DueSettlements,
		"the activated chain and the closed window; the oldest due is the window that closed an hour ago")
	assert.Equal(t, time.Hour, f.DueSettlements.Age(now))

	// Earlier, the closed window was not yet due.
	earlier := readGauges(t, s, now.Add(-2*time.Hour))
	assert.Equal(t, int64(1), earlier.DueSettlements.Count)
}
