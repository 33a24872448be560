package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/storage"
)

// The floor history is append-only by the same layers as the ledger: the
// triggers stop the owner (also as a replica), and the application role has
// no UPDATE, DELETE or TRUNCATE privilege at all.
func TestFloorHistoryAppendOnlyLayers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	db := open(t, url)
	cats, err := market.LoadCatalogue("")
	require.NoError(t, err)
	svc := &market.Service{
		Update:    market.Txer(storage.Updater[market.Tx](db)),
		View:      market.Txer(storage.Viewer[market.Tx](db)),
		Now:       func() time.Time { return time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC) },
		Catalogue: cats,
	}
	require.NoError(t, svc.Reconcile(ctx))
	owner := ownerConn(t, url)
	count := func() int {
		var n int
		require.NoError(t, owner.QueryRow(ctx, "SELECT count(*) FROM category_floors").Scan(&n))
		return n
	}
	require.Equal(t, 20, count())

	refused := func(t *testing.T, stmt, message string) {
		t.Helper()
		_, err := owner.Exec(ctx, stmt)
		require.Error(t, err, "%s must be refused", stmt)
		assert.Equal(t, "42501", pgCode(err), "%s: %v", stmt, err)
		assert.Contains(t, err.Error(), message, stmt)
	}
	t.Run("OwnerHitsTriggers", func(t *testing.T) {
		refused(t, "UPDATE category_floors SET floor_cents = floor_cents + 1", "category_floors is append-only: UPDATE blocked")
		refused(t, "DELETE FROM category_floors", "category_floors is append-only: DELETE blocked")
		refused(t, "TRUNCATE category_floors", "category_floors is append-only: TRUNCATE blocked")
	})
	t.Run("ReplicaRoleStillHitsTriggers", func(t *testing.T) {
		if _, err := owner.Exec(ctx, "SET session_replication_role = replica"); err != nil {
			t.Skipf("cannot set session_replication_role (not a superuser): %v", err)
		}
		defer owner.Exec(ctx, "RESET session_replication_role")
		refused(t, "UPDATE category_floors SET floor_cents = floor_cents + 1", "category_floors is append-only: UPDATE blocked")
		refused(t, "DELETE FROM category_floors", "category_floors is append-only: DELETE blocked")
	})
	t.Run("AppRoleHasNoPrivilege", func(t *testing.T) {
		_, err := owner.Exec(ctx, "SET ROLE "+postgres.AppRole)
		require.NoError(t, err)
		defer owner.Exec(ctx, "RESET ROLE")
		for _, stmt := range []string{
			"UPDATE category_floors SET floor_cents = floor_cents + 1",
			"DELETE FROM category_floors",
			"TRUNCATE category_floors",
			"INSERT INTO category_floors SELECT category, platform, version, 1, reason, at FROM category_floors ON CONFLICT (category, platform, version) DO UPDATE SET floor_cents = 1",
		} {
			refused(t, stmt, "permission denied for table category_floors")
		}
		refused(t, "DELETE FROM campaigns", "permission denied for table campaigns")
	})
	t.Run("TriggersAreEnabledAlways", func(t *testing.T) {
		rows, err := owner.Query(ctx, `SELECT t.tgname, t.tgenabled::text FROM pg_trigger t
			JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal AND c.relname = 'category_floors' ORDER BY 1`)
		require.NoError(t, err)
		type trig struct{ Name, Enabled string }
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[trig])
		require.NoError(t, err)
		assert.Equal(t, []trig{{"category_floors_no_delete", "A"}, {"category_floors_no_truncate", "A"}, {"category_floors_no_update", "A"}}, got)
	})
	assert.Equal(t, 20, count(), "nothing was changed")
}
