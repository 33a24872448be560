package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
)

// Every ledger page is an index seek: on 60,000 lines of three accounts (the
// planner's statistics taken), a page walks (account_id, seq) from its lower
// bound, each date bound is a seek on (account_id, created_at, seq), and no
// step scans the table or sorts the account's lines.
func TestLedgerPagePlanIsASeek(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	open(t, url) // migrates
	conn := ownerConn(t, url)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := conn.Exec(ctx, `INSERT INTO ledger_operations (id, key, kind, request_hash, created_at) VALUES ('op_plan', 'plan', 'topup', '\x00', $1)`, start)
	require.NoError(t, err)
	for _, app := range []string{"app_0", "app_1", "app_2"} {
		account := ledger.Wallet(app)
		_, err := conn.Exec(ctx, `INSERT INTO ledger_accounts (id, balance, seq, head) VALUES ($1, 20000, 20000, '\x00')`, account)
		require.NoError(t, err)
		// One line every 26 minutes: 20,000 lines over a year.
		_, err = conn.Exec(ctx, `INSERT INTO ledger_lines (id, operation_id, idx, account_id, seq, type, amount, balance_after, created_at, prev_hash, hash)
SELECT $1 || '.' || s, 'op_plan', s + $3, $1, s, 'adjustment', 1, s, $2::timestamptz + s * interval '26 minutes', '\x00', '\x00'
FROM generate_series(1, 20000) s`, account, start, len(app)*0+int(app[4]-'0')*100000)
		require.NoError(t, err)
	}
	_, err = conn.Exec(ctx, `ANALYZE ledger_lines`)
	require.NoError(t, err)

	mid := start.AddDate(0, 6, 0)
	for name, q := range map[string]ledger.LineQuery{
		"first page":    {Limit: 101},
		"next page":     {AfterSeq: 5000, Limit: 101},
		"from":          {From: mid, Limit: 101},
		"from and to":   {From: mid, Before: mid.AddDate(0, 0, 1), Limit: 101},
		"to and cursor": {Before: mid, AfterSeq: 5000, Limit: 101},
	} {
		query, args := postgres.LinesQuery(ledger.Wallet("app_1"), q)
		text := explain(t, conn, query, args...)
		t.Logf("%s:\n%s", name, text)
		require.Contains(t, text, "Index Scan using ledger_lines_account_id_seq_key on ledger_lines", name)
		require.NotContains(t, text, "Seq Scan", name)
		require.NotContains(t, text, "Sort", name)
		require.NotContains(t, text, "Bitmap", name)
		if !q.From.IsZero() || !q.Before.IsZero() {
			require.Contains(t, text, "ledger_lines_account_time_seq", name)
		}
	}
}

// Every filter of a chain page is led by an index: on 100,000 chains of
// 50 apps over a year (the planner's statistics taken), a page with a
// state walks the side's (app, state, created_at, id) from the cursor, a
// page of a campaign walks (campaign_id, created_at, id) or, with a state,
// (campaign_id, state, created_at, id), and the
// advertiser side of another app's campaign is cut by a one-time filter
// before it reads a chain. No plan scans the table or walks an unfiltered
// side's (app, created_at); the same holds for the generic plan a pooled
// connection caches after five runs. (A bitmap scan of the filter's index,
// which the planner takes when it expects fewer matches than a page, reads
// only matching chains.)
func TestChainPagePlansFollowTheFilters(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewTestDatabase(t)
	open(t, url) // migrates
	conn := ownerConn(t, url)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := conn.Exec(ctx, `INSERT INTO campaigns (id, app_id, categories, daily_budget_cents, paused, status, created_at, updated_at)
SELECT 'cmp_' || a || '_' || c, 'app_' || a, '["games"]', 1000, false, 'active', $1, $1
FROM generate_series(0, 49) a, generate_series(0, 3) c`, start)
	require.NoError(t, err)
	// One chain every 5 minutes, a third of them cleared, one in 20
	// rejected, one in 200 waiting for its 48 hours.
	_, err = conn.Exec(ctx, `INSERT INTO chains (id, nonce, state, reason, campaign_id, publisher_app_id, advertiser_app_id, created_at, updated_at)
SELECT 'ch_' || s, 'n' || s, st, CASE WHEN st IN ('rejected', 'refunded') THEN 'r' ELSE '' END,
  'cmp_' || (s % 50) || '_' || (s / 50 % 4), 'app_' || ((s + 1) % 50), 'app_' || (s % 50),
  $1::timestamptz + s * interval '5 minutes', $1::timestamptz + s * interval '5 minutes'
FROM generate_series(1, 100000) s,
LATERAL (SELECT CASE WHEN s % 200 = 0 THEN 'activated_48h' WHEN s % 20 = 1 THEN 'rejected' WHEN s % 3 = 0 THEN 'cleared'
  WHEN s % 7 = 2 THEN 'refunded' ELSE 'clicked' END AS st) x`, start)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `ANALYZE chains; ANALYZE campaigns`)
	require.NoError(t, err)

	after := &cursor.Position{CreatedAt: start.AddDate(0, 6, 0), ID: "ch_52000"}
	type want struct{ publisher, advertiser string } // the index each side reads
	for _, c := range []struct {
		name string
		q    attribution.ChainQuery
		want want
	}{
		{"state", attribution.ChainQuery{State: attribution.StateActivated}, want{"chains_publisher_state", "chains_advertiser_state"}},
		{"state, next page", attribution.ChainQuery{State: attribution.StateRejected, After: after}, want{"chains_publisher_state", "chains_advertiser_state"}},
		{"state as advertiser", attribution.ChainQuery{State: attribution.StateActivated, Role: attribution.RoleAdvertiser}, want{"", "chains_advertiser_state"}},
		{"state as publisher", attribution.ChainQuery{State: attribution.StateCleared, Role: attribution.RolePublisher, After: after}, want{"chains_publisher_state", ""}},
		{"own campaign as advertiser", attribution.ChainQuery{CampaignID: "cmp_1_2", Role: attribution.RoleAdvertiser}, want{"", "chains_campaign_created"}},
		{"another app's campaign as advertiser", attribution.ChainQuery{CampaignID: "cmp_7_2", Role: attribution.RoleAdvertiser, After: after}, want{"", "chains_campaign_created"}},
		{"own campaign in a state", attribution.ChainQuery{CampaignID: "cmp_1_3", State: attribution.StateRejected, Role: attribution.RoleAdvertiser, After: after}, want{"", "chains_campaign_state"}},
	} {
		c.q.AppID, c.q.Limit = "app_1", 101
		for _, mode := range []string{"auto", "force_generic_plan"} {
			_, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode)
			require.NoError(t, err)
			query, args := postgres.ChainsQuery(c.q)
			text := explain(t, conn, query, args...)
			name := c.name + " (" + mode + ")"
			t.Logf("%s:\n%s", name, text)
			require.NotContains(t, text, "Seq Scan on chains", name)
			for _, unfiltered := range []string{"chains_publisher_created", "chains_advertiser_created", "chains_created "} {
				require.NotContains(t, text, unfiltered, name)
			}
			for _, index := range []string{c.want.publisher, c.want.advertiser} {
				if index != "" {
					require.Regexp(t, `(using|Bitmap Index Scan on) `+index+` `, text, name)
				}
			}
			if c.q.CampaignID != "" && c.want.advertiser != "" {
				require.Contains(t, text, "One-Time Filter", name)
			}
		}
	}
}

// explain returns PostgreSQL's plan of query with args, a line of text per
// node, as EXPLAIN prints it.
func explain(t *testing.T, conn *pgx.Conn, query string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "EXPLAIN "+query, args...)
	require.NoError(t, err)
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}
