package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var tableScan = regexp.MustCompile(`^SCAN (payouts|outbox|webhook_deliveries|jobs|chains)\b`)

// Each backlog gauge reads its partial or range index, never a whole table:
// a scrape costs the backlog's size, not the table's (gauges.go).
func TestGaugeQueriesUseTheirIndexes(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "xpromo.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	raw, err := sql.Open("sqlite", "file:"+db.Path())
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })

	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for _, c := range []struct {
		name    string
		query   string
		args    []any
		indexes []string
	}{
		{"pending payouts", pendingPayoutsQuery, nil, []string{"payouts_pending"}},
		{"undispatched events", undispatchedEventsQuery, nil, []string{"outbox_pending"}},
		{"due deliveries", dueDeliveriesQuery, []any{now}, []string{"webhook_deliveries_due"}},
		{"runnable jobs", runnableJobsQuery, []any{now, now}, []string{"jobs_queued", "jobs_leases"}},
		{"due settlements", dueSettlementsQuery, []any{now, now}, []string{"chains_due_activated", "chains_due_installed"}},
	} {
		plan := explainPlan(t, raw, c.query, c.args...)
		text := strings.Join(plan, "\n")
		t.Logf("%s:\n%s", c.name, text)
		for _, idx := range c.indexes {
			assert.Contains(t, text, "INDEX "+idx, c.name)
		}
		for _, line := range plan {
			// A table is read through an index (a scan of a partial index
			// reads the backlog only), never scanned whole.
			if tableScan.MatchString(line) {
				assert.Contains(t, line, " USING ", c.name)
			}
		}
	}
}
