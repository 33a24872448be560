package attribution_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/storage"
)

// TestRetentionIgnoresPublisherSuspendedRefunds: the activated installs a
// publisher suspended for fraud sent are refunded by the sweep
// (publisher_suspended); they count neither as charged nor as resolved in
// the advertiser's retention_48h and go-live rule, so the advertiser they
// defrauded keeps the retention of its honest installs and goes live.
// Installs refunded not_activated still count against it (both stores).
func TestRetentionIgnoresPublisherSuspendedRefunds(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		// Two advertisers, each with an honest publisher; one farm
		// publishes for both.
		clean, mixed := w.pair("productivity", 0), w.pair("productivity", 0)
		farm := w.app("Farm", xpromo.PlatformMac, "productivity")
		viaFarm := func(p pair) pair { p.pub = farm; return p }

		// clean: 10 installs cleared, 20 sent by the farm.
		w.activated([]pair{clean}, 10)
		w.activated([]pair{viaFarm(clean)}, 20)
		// mixed: the same, and 16 installs that never activated.
		w.activated([]pair{mixed}, 10)
		w.activated([]pair{viaFarm(mixed)}, 20)
		w.lapsed([]pair{mixed}, 16)

		_, err := w.srv.Apps.Act(w.ctx, farm, apps.Suspend, apps.ReasonOperatorFraud)
		require.NoError(t, err)
		res, err := w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, attribution.SweepResult{Cleared: 20, Refunded: 56}, res)

		stats := func(app string) xpromo.Stats {
			t.Helper()
			st, err := w.srv.Market.Stats(w.ctx, app, xpromo.PeriodLast7Days)
			require.NoError(t, err)
			return st
		}
		// 10 charged of 10 resolved: the farm's 20 refunds are left out
		// (counted, they would make it 10/30, below the 0.4 of going live).
		st := stats(clean.adv)
		assert.Equal(t, []any{int64(30), int64(10), 1.0}, []any{st.Installs, st.Cleared, st.Retention48h})
		assert.Equal(t, xpromo.AppStatusLive, w.status(clean.adv), "10 cleared with retention 1: live")

		// 10 charged of 26 resolved: the not_activated refunds count.
		st = stats(mixed.adv)
		assert.Equal(t, []any{int64(46), int64(10), 10.0 / 26}, []any{st.Installs, st.Cleared, st.Retention48h})
		assert.Equal(t, xpromo.AppStatusThrottled, w.status(mixed.adv), "retention 10/26 is below 0.4")

		w.verify()
	})
}

// status is the app's status as the store holds it.
func (w *world) status(appID string) xpromo.AppStatus {
	w.t.Helper()
	var a apps.App
	var found bool
	require.NoError(w.t, w.store.View(w.ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		a, found, err = tx.GetApp(ctx, appID, false)
		return err
	}))
	require.True(w.t, found, "app %s", appID)
	return a.Status
}
