package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/ledger"
)

// Every ledger page is an index seek: the page walks (account_id, seq) from
// its lower bound, and each date bound is a seek on (account_id, created_at,
// seq). No step scans the table, sorts, or reads the lines before the page.
func TestLedgerPagePlanIsASeek(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "xpromo.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	raw, err := sql.Open("sqlite", "file:"+db.Path())
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })

	day := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for name, q := range map[string]ledger.LineQuery{
		"first page":    {Limit: 101},
		"next page":     {AfterSeq: 5000, Limit: 101},
		"from":          {From: day, Limit: 101},
		"from and to":   {From: day, Before: day.AddDate(0, 0, 1), Limit: 101},
		"to and cursor": {Before: day, AfterSeq: 5000, Limit: 101},
	} {
		query, args := linesQuery(ledger.Wallet("app_1"), q)
		plan := explainPlan(t, raw, query, args...)
		text := strings.Join(plan, "\n")
		t.Logf("%s:\n%s", name, text)
		require.Contains(t, plan[0], "SEARCH ledger_lines USING INDEX sqlite_autoindex_ledger_lines_2 (account_id=? AND seq>?", name)
		require.NotContains(t, plan[0], "created_at", name)
		require.NotContains(t, text, "SCAN", name)
		require.NotContains(t, text, "TEMP B-TREE", name)
		if !q.From.IsZero() || !q.Before.IsZero() {
			require.Contains(t, text, "SEARCH ledger_lines USING COVERING INDEX ledger_lines_account_time_seq (account_id=? AND created_at>?)", name)
		}
	}
}

// Every filter of a chain page is led by an index (PostgreSQL's
// TestChainPagePlansFollowTheFilters): a state walks the side's (app,
// state, created_at, id), a campaign (campaign_id, created_at, id) or,
// with a state, (campaign_id, state, created_at, id); no plan scans the
// table or walks an unfiltered side's (app, created_at).
func TestChainPagePlansFollowTheFilters(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "xpromo.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	raw, err := sql.Open("sqlite", "file:"+db.Path())
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })

	after := &cursor.Position{CreatedAt: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), ID: "ch_5000"}
	type want struct{ publisher, advertiser string } // the index each side reads
	for _, c := range []struct {
		name string
		q    attribution.ChainQuery
		want want
	}{
		{"state", attribution.ChainQuery{State: attribution.StateActivated}, want{"chains_publisher_state", "chains_advertiser_state"}},
		{"state, next page", attribution.ChainQuery{State: attribution.StateRejected, After: after}, want{"chains_publisher_state", "chains_advertiser_state"}},
		{"state as publisher", attribution.ChainQuery{State: attribution.StateCleared, Role: attribution.RolePublisher, After: after}, want{"chains_publisher_state", ""}},
		{"own campaign as advertiser", attribution.ChainQuery{CampaignID: "cmp_1", Role: attribution.RoleAdvertiser, After: after}, want{"", "chains_campaign_created"}},
		{"own campaign in a state", attribution.ChainQuery{CampaignID: "cmp_1", State: attribution.StateRejected, Role: attribution.RoleAdvertiser}, want{"", "chains_campaign_state"}},
	} {
		c.q.AppID, c.q.Limit = "app_1", 101
		query, args := chainsQuery(c.q)
		plan := explainPlan(t, raw, query, args...)
		text := strings.Join(plan, "\n")
		t.Logf("%s:\n%s", c.name, text)
		require.NotContains(t, text, "SCAN chains", c.name)
		for _, unfiltered := range []string{"chains_publisher_created", "chains_advertiser_created", "chains_created "} {
			require.NotContains(t, text, unfiltered, c.name)
		}
		for _, index := range []string{c.want.publisher, c.want.advertiser} {
			if index != "" {
				require.Regexp(t, `SEARCH chains USING INDEX `+index+` \(`, text, c.name)
			}
		}
		if c.q.After != nil { // the cursor is a range of the index, not a filter
			require.Contains(t, text, "(created_at,id)<(?,?))", c.name)
		}
	}
}

// explainPlan returns SQLite's plan of query with args, the detail of each
// step of EXPLAIN QUERY PLAN.
func explainPlan(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return plan
}
