package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
		rows, err := conn.Query(ctx, "EXPLAIN "+query, args...)
		require.NoError(t, err)
		var plan []string
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			plan = append(plan, line)
		}
		require.NoError(t, rows.Err())
		text := strings.Join(plan, "\n")
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
