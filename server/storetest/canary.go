package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/scoring"
	"github.com/xpromo/xpromo/server/storage"
)

// Canary runs the suite of the canary check's store methods
// (attribution.Tx's canary counters and clicks, scoring.Tx.CanaryRecord,
// lifecycle.Tx.CanaryClicks) on a fresh store from newStore: the sqlite and
// postgres packages call it from their tests.
func Canary(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("CountsAndClicks", func(t *testing.T) { testCanaryCountsAndClicks(t, newStore(t)) })
	t.Run("SinceReinstatement", func(t *testing.T) { testCanarySinceReinstatement(t, newStore(t)) })
}

func canaryRecord(t *testing.T, s storage.Store, app string) scoring.Canaries {
	t.Helper()
	var c scoring.Canaries
	read(t, s, func(ctx context.Context, tx storage.Tx) (err error) {
		c, err = tx.CanaryRecord(ctx, app)
		return err
	})
	return c
}

func canaryClicks(t *testing.T, s storage.Store) map[string]int64 {
	t.Helper()
	var m map[string]int64
	read(t, s, func(ctx context.Context, tx storage.Tx) (err error) {
		m, err = tx.CanaryClicks(ctx)
		return err
	})
	return m
}

func testCanaryCountsAndClicks(t *testing.T, s storage.Store) {
	whApp(t, s, "app_c")
	whApp(t, s, "app_d")
	assert.Equal(t, scoring.Canaries{}, canaryRecord(t, s, "app_c"), "nothing served, nothing clicked")
	assert.Empty(t, canaryClicks(t, s))

	day1, day2 := whStart.Truncate(24*time.Hour), whStart.Truncate(24*time.Hour).Add(24*time.Hour)
	// Counts add up per app and day, across batches.
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.AddCanaryCounts(ctx, []attribution.CanaryCount{{Day: day1, AppID: "app_c", Count: 2}, {Day: day2, AppID: "app_c", Count: 1}, {Day: day1, AppID: "app_d", Count: 7}})
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.AddCanaryCounts(ctx, []attribution.CanaryCount{{Day: day1, AppID: "app_c", Count: 3}})
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.AddCanaryCounts(ctx, nil) })
	assert.Equal(t, scoring.Canaries{Served: 6}, canaryRecord(t, s, "app_c"))
	assert.Equal(t, scoring.Canaries{Served: 7}, canaryRecord(t, s, "app_d"))

	// A click is recorded once per jti, whichever way it came.
	click := attribution.CanaryClick{Nonce: "jti_1", AppID: "app_c", Via: attribution.CanaryViaClick, At: whStart.Add(time.Minute)}
	for i, want := range []bool{true, false} {
		update(t, s, func(ctx context.Context, tx storage.Tx) error {
			c := click
			if i == 1 {
				c.Via, c.At = attribution.CanaryViaInstall, c.At.Add(time.Hour)
			}
			inserted, err := tx.InsertCanaryClick(ctx, c)
			assert.Equal(t, want, inserted, "attempt %d", i)
			return err
		})
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.InsertCanaryClick(ctx, attribution.CanaryClick{Nonce: "jti_2", AppID: "app_c", Via: attribution.CanaryViaInstall, At: whStart})
		return err
	})
	assert.Equal(t, scoring.Canaries{Served: 6, Clicked: 2}, canaryRecord(t, s, "app_c"))
	assert.Equal(t, map[string]int64{"app_c": 2}, canaryClicks(t, s))
	assert.Equal(t, scoring.Canaries{Served: 7}, canaryRecord(t, s, "app_d"))

	// The records are evidence: the store refuses to change them.
	if ex, ok := s.(execer); ok {
		assert.Error(t, ex.Exec(context.Background(), "UPDATE canary_clicks SET app_id = 'app_d'"))
		assert.Error(t, ex.Exec(context.Background(), "DELETE FROM canary_clicks"))
	}
}

// After a reinstatement an app starts again: clicks from it on, canaries
// served from its UTC day on.
func testCanarySinceReinstatement(t *testing.T, s storage.Store) {
	whApp(t, s, "app_r")
	day1 := whStart.Truncate(24 * time.Hour)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.AddCanaryCounts(ctx, []attribution.CanaryCount{{Day: day1, AppID: "app_r", Count: 9}}); err != nil {
			return err
		}
		_, err := tx.InsertCanaryClick(ctx, attribution.CanaryClick{Nonce: "jti_old", AppID: "app_r", Via: attribution.CanaryViaClick, At: whStart})
		return err
	})
	require.Equal(t, scoring.Canaries{Served: 9, Clicked: 1}, canaryRecord(t, s, "app_r"))
	require.Equal(t, map[string]int64{"app_r": 1}, canaryClicks(t, s))

	suspended, reinstated := whStart.Add(time.Hour), whStart.Add(2*24*time.Hour)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.InsertAppStatusChange(ctx, apps.StatusChange{AppID: "app_r", From: xpromo.AppStatusLive, To: xpromo.AppStatusSuspended, Reason: "canary_failed", Actor: apps.ActorFraud, At: suspended}); err != nil {
			return err
		}
		return tx.InsertAppStatusChange(ctx, apps.StatusChange{AppID: "app_r", From: xpromo.AppStatusSuspended, To: xpromo.AppStatusLive, Reason: "operator_reinstated", Actor: apps.ActorAdmin, At: reinstated})
	})
	assert.Equal(t, scoring.Canaries{}, canaryRecord(t, s, "app_r"), "a clean slate at reinstatement")
	assert.Empty(t, canaryClicks(t, s))

	reDay := reinstated.Truncate(24 * time.Hour)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.AddCanaryCounts(ctx, []attribution.CanaryCount{{Day: reDay, AppID: "app_r", Count: 4}}); err != nil {
			return err
		}
		_, err := tx.InsertCanaryClick(ctx, attribution.CanaryClick{Nonce: "jti_new", AppID: "app_r", Via: attribution.CanaryViaInstall, At: reinstated.Add(time.Second)})
		return err
	})
	assert.Equal(t, scoring.Canaries{Served: 4, Clicked: 1}, canaryRecord(t, s, "app_r"))
	assert.Equal(t, map[string]int64{"app_r": 1}, canaryClicks(t, s))
}
