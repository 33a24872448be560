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
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
)

// Complaints runs the suite of complaints.Tx and of the earn mode part of
// apps.Tx on a fresh store from newStore: the sqlite and postgres packages
// call it from their tests.
func Complaints(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("EarnModeHistory", func(t *testing.T) { testEarnModeHistory(t, newStore(t)) })
	t.Run("Complaints", func(t *testing.T) { testComplaints(t, newStore(t)) })
	t.Run("AppsTraded", func(t *testing.T) { testAppsTraded(t, newStore(t)) })
}

// execer is the raw statement access both stores have.
type execer interface {
	Exec(ctx context.Context, sql string) error
}

func read(t *testing.T, s storage.Store, fn func(ctx context.Context, tx storage.Tx) error) {
	t.Helper()
	require.NoError(t, s.View(context.Background(), fn))
}

func testEarnModeHistory(t *testing.T, s storage.Store) {
	whApp(t, s, "app_e")
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, ok, err := tx.LastEarnModeChange(ctx, "app_e")
		assert.False(t, ok, "an app that never switched has no change")
		return err
	})
	first, second := whStart.Add(time.Hour), whStart.Add(2*time.Hour+time.Microsecond)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.SetAppEarnMode(ctx, "app_e", ledger.EarnCredits, first); err != nil {
			return err
		}
		return tx.InsertEarnModeChange(ctx, apps.EarnModeChange{AppID: "app_e", From: ledger.EarnCash, To: ledger.EarnCredits, At: first})
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.SetAppEarnMode(ctx, "app_e", ledger.EarnCash, second); err != nil {
			return err
		}
		return tx.InsertEarnModeChange(ctx, apps.EarnModeChange{AppID: "app_e", From: ledger.EarnCredits, To: ledger.EarnCash, At: second})
	})
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		c, ok, err := tx.LastEarnModeChange(ctx, "app_e")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, apps.EarnModeChange{AppID: "app_e", From: ledger.EarnCredits, To: ledger.EarnCash, At: second}, c)
		a, _, err := tx.GetApp(ctx, "app_e", false)
		assert.Equal(t, ledger.EarnCash, a.EarnMode)
		assert.Equal(t, second, a.UpdatedAt)
		return err
	})
	// The history is append-only, like the status history.
	ex := s.(execer)
	assert.Error(t, ex.Exec(context.Background(), `UPDATE app_earn_mode_changes SET to_mode = 'credits'`))
	assert.Error(t, ex.Exec(context.Background(), `DELETE FROM app_earn_mode_changes`))
	// The column refuses a mode that does not exist.
	assert.Error(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.SetAppEarnMode(ctx, "app_e", "gold", second)
	}))
}

func testComplaints(t *testing.T, s storage.Store) {
	for _, id := range []string{"app_r", "app_x", "app_y"} {
		whApp(t, s, id)
	}
	at := func(i int) time.Time { return whStart.Add(time.Duration(i) * time.Minute) }
	c1 := complaints.Complaint{ID: "cmpl_1", ReporterID: "app_r", AppID: "app_x", Reason: complaints.Fraud, Detail: "fake installs", Status: complaints.Open, CreatedAt: at(1)}
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.InsertComplaint(ctx, c1) })

	// One open complaint per (reporter, reported): the store refuses a
	// second as a conflict (the service retries and then answers
	// complaint_open); the other direction and another app are fine.
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertComplaint(ctx, complaints.Complaint{ID: "cmpl_dup", ReporterID: "app_r", AppID: "app_x", Reason: complaints.Other, Status: complaints.Open, CreatedAt: at(2)})
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), ledger.ErrConflict.Error())
	c2 := complaints.Complaint{ID: "cmpl_2", ReporterID: "app_x", AppID: "app_r", Reason: complaints.MisleadingAd, Status: complaints.Open, CreatedAt: at(2)}
	c3 := complaints.Complaint{ID: "cmpl_3", ReporterID: "app_r", AppID: "app_y", Reason: complaints.Malware, Status: complaints.Open, CreatedAt: at(3)}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.InsertComplaint(ctx, c2); err != nil {
			return err
		}
		return tx.InsertComplaint(ctx, c3)
	})
	// An app cannot complain about itself, even past the service.
	assert.Error(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertComplaint(ctx, complaints.Complaint{ID: "cmpl_self", ReporterID: "app_r", AppID: "app_r", Reason: complaints.Other, Status: complaints.Open, CreatedAt: at(4)})
	}))

	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		got, ok, err := tx.OpenComplaint(ctx, "app_r", "app_x")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, c1, got)
		_, ok, err = tx.OpenComplaint(ctx, "app_y", "app_x")
		require.NoError(t, err)
		assert.False(t, ok)
		got, ok, err = tx.GetComplaint(ctx, "cmpl_3", false)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, c3, got)
		_, ok, err = tx.GetComplaint(ctx, "cmpl_none", false)
		assert.False(t, ok)
		return err
	})

	// Resolving: upheld and dismissed; the pair may then complain again.
	resolvedAt := at(10)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if _, _, err := tx.GetComplaint(ctx, "cmpl_1", true); err != nil {
			return err
		}
		if err := tx.ResolveComplaint(ctx, "cmpl_1", complaints.Upheld, "confirmed by the fraud team", resolvedAt); err != nil {
			return err
		}
		return tx.ResolveComplaint(ctx, "cmpl_3", complaints.Dismissed, "", resolvedAt)
	})
	c4 := complaints.Complaint{ID: "cmpl_4", ReporterID: "app_r", AppID: "app_x", Reason: complaints.BrokenInstall, Status: complaints.Open, CreatedAt: at(11)}
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.InsertComplaint(ctx, c4) })

	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		got, ok, err := tx.GetComplaint(ctx, "cmpl_1", false)
		require.NoError(t, err)
		require.True(t, ok)
		want := c1
		want.Status, want.ResolvedAt, want.Note = complaints.Upheld, &resolvedAt, "confirmed by the fraud team"
		assert.Equal(t, want, got)

		mine, err := tx.ReporterComplaints(ctx, "app_r", 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"cmpl_4", "cmpl_3", "cmpl_1"}, complaintIDs(mine), "newest first")
		mine, err = tx.ReporterComplaints(ctx, "app_r", 2)
		require.NoError(t, err)
		assert.Equal(t, []string{"cmpl_4", "cmpl_3"}, complaintIDs(mine))

		all, err := tx.Complaints(ctx, "", nil, 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"cmpl_4", "cmpl_3", "cmpl_2", "cmpl_1"}, complaintIDs(all))
		open, err := tx.Complaints(ctx, complaints.Open, nil, 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"cmpl_4", "cmpl_2"}, complaintIDs(open))
		upheld, err := tx.Complaints(ctx, complaints.Upheld, nil, 1)
		require.NoError(t, err)
		assert.Equal(t, []string{"cmpl_1"}, complaintIDs(upheld))

		for app, want := range map[string]int{"app_x": 1, "app_y": 0, "app_r": 0} {
			n, err := tx.CountComplaints(ctx, app, complaints.Upheld)
			require.NoError(t, err)
			assert.Equal(t, want, n, "upheld complaints about %s", app)
		}
		n, err := tx.CountComplaints(ctx, "app_x", complaints.Open)
		assert.Equal(t, 1, n)
		return err
	})
}

func complaintIDs(cs []complaints.Complaint) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func testAppsTraded(t *testing.T, s storage.Store) {
	for _, id := range []string{"app_p", "app_a", "app_o"} {
		whApp(t, s, id)
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.InsertChain(ctx, attribution.Chain{ID: "ch_1", Nonce: "n1", State: attribution.StateClicked,
			PublisherAppID: "app_p", AdvertiserAppID: "app_a", Platform: xpromo.PlatformMac, CreatedAt: whStart, UpdatedAt: whStart})
		return err
	})
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		for _, c := range []struct {
			a, b string
			want bool
		}{{"app_p", "app_a", true}, {"app_a", "app_p", true}, {"app_p", "app_o", false}, {"app_o", "app_a", false}} {
			got, err := tx.AppsTraded(ctx, c.a, c.b)
			require.NoError(t, err)
			assert.Equal(t, c.want, got, "%s and %s", c.a, c.b)
		}
		return nil
	})
}
