package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/storage"
)

// The earn mode history refuses SQLite's ways around append-only too.
func TestEarnModeHistoryRefusesReplace(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	svc := &apps.Service{Update: storage.Updater[apps.Tx](db), View: storage.Viewer[apps.Tx](db),
		Now: func() time.Time { return time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC) }}
	a, _, _, err := svc.Register(ctx, apps.RegisterParams{Name: "Snip", Platform: "mac", BundleID: "com.example.snip",
		Domain: "example.com", DownloadURL: "https://example.com/Snip.zip", ContactEmail: "dev@example.com"})
	require.NoError(t, err)
	_, err = svc.SetEarnMode(ctx, a.ID, "credits")
	require.NoError(t, err)
	for _, stmt := range []string{
		`INSERT OR REPLACE INTO app_earn_mode_changes SELECT seq, app_id, to_mode, from_mode, at FROM app_earn_mode_changes`,
		`REPLACE INTO app_earn_mode_changes SELECT seq, app_id, to_mode, from_mode, at FROM app_earn_mode_changes`,
		`UPDATE app_earn_mode_changes SET to_mode = 'cash'`,
		`DELETE FROM app_earn_mode_changes`,
	} {
		err := db.Exec(ctx, stmt)
		require.Error(t, err, stmt)
		assert.Contains(t, err.Error(), "app_earn_mode_changes is append-only", stmt)
	}
	st, err := svc.EarnMode(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, "credits", string(st.Mode))
	assert.Equal(t, time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC), st.Since)
}
