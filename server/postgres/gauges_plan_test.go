package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
)

// Each backlog gauge can read its partial or range index rather than its
// table: with sequential scans priced out (the tables are empty here, where
// the planner rightly prefers them), every plan names the gauge's indexes
// and scans no table whole. A scrape then costs the backlog's size, not the
// table's (gauges.go).
func TestGaugeQueriesUseTheirIndexes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	open(t, url) // migrates
	conn := ownerConn(t, url)
	_, err := conn.Exec(ctx, `SET enable_seqscan = off`)
	require.NoError(t, err)
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	want := map[string][]string{
		"pending payouts":     {"payouts_pending"},
		"undispatched events": {"outbox_pending"},
		"due deliveries":      {"webhook_deliveries_due"},
		"runnable jobs":       {"jobs_queued", "jobs_leases"},
		"due settlements":     {"chains_due_activated", "chains_due_installed"},
	}
	require.Len(t, postgres.GaugeQueries, len(want))
	for name, query := range postgres.GaugeQueries {
		var args []any
		if strings.Contains(query, "$1") {
			args = []any{now}
		}
		text := explain(t, conn, query, args...)
		t.Logf("%s:\n%s", name, text)
		for _, idx := range want[name] {
			assert.Contains(t, text, " "+idx, name)
		}
		assert.NotContains(t, text, "Seq Scan", name)
	}
}
