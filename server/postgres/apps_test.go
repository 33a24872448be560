package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storetest"
)

// The apps' append-only tables (status history, admin audit, earn mode
// history) refuse
// UPDATE, DELETE and TRUNCATE through their triggers even for the owner, also
// with session_replication_role = replica; the application role is refused
// by its privileges before any trigger runs.
func TestAppsAppendOnlyLayers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	svc := &apps.Service{Update: storage.Updater[apps.Tx](db), View: storage.Viewer[apps.Tx](db),
		Now: func() time.Time { return time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC) }}
	a, _, _, err := svc.Register(ctx, apps.RegisterParams{Name: "Snip", Platform: "mac", BundleID: "com.example.snip",
		Domain: "example.com", DownloadURL: "https://example.com/Snip.zip", ContactEmail: "dev@example.com"})
	require.NoError(t, err)
	_, err = svc.Act(ctx, a.ID, apps.Approve, "ok")
	require.NoError(t, err)
	_, err = svc.SetEarnMode(ctx, a.ID, "credits")
	require.NoError(t, err)

	owner := ownerConn(t, url)
	tables := []string{"app_status_history", "admin_audit", "app_earn_mode_changes"}
	for _, replica := range []bool{false, true} {
		if replica {
			_, err := owner.Exec(ctx, "SET session_replication_role = replica")
			require.NoError(t, err)
		}
		for _, table := range tables {
			for stmt, msg := range map[string]string{
				"UPDATE " + table + " SET at = at": table + " is append-only: UPDATE blocked",
				"DELETE FROM " + table:             table + " is append-only: DELETE blocked",
				"TRUNCATE " + table + " CASCADE":   "is append-only: TRUNCATE blocked",
			} {
				_, err := owner.Exec(ctx, stmt)
				require.Error(t, err, stmt)
				assert.Equal(t, "42501", pgCode(err), stmt)
				assert.Contains(t, err.Error(), msg, stmt)
			}
		}
	}
	_, err = owner.Exec(ctx, "RESET session_replication_role")
	require.NoError(t, err)

	for _, table := range tables {
		for _, stmt := range []string{"UPDATE " + table + " SET at = at", "DELETE FROM " + table, "TRUNCATE " + table} {
			err := db.Exec(ctx, stmt)
			require.Error(t, err, stmt)
			assert.Equal(t, "42501", pgCode(err), stmt)
			assert.Contains(t, err.Error(), "permission denied for table "+table, stmt)
		}
	}

	var history, audit, modes int
	require.NoError(t, owner.QueryRow(ctx, "SELECT (SELECT count(*) FROM app_status_history), (SELECT count(*) FROM admin_audit), (SELECT count(*) FROM app_earn_mode_changes)").Scan(&history, &audit, &modes))
	assert.Equal(t, []int{2, 1, 1}, []int{history, audit, modes}, "nothing was changed")
}

func TestAppsStore(t *testing.T) {
	storetest.Apps(t, func(t *testing.T) storage.Store { return open(t, pgtest.NewTestDatabase(t)) })
}
