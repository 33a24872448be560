package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/attribution"
)

// chainCopyColumns are chains' columns in chainArgs' order, for COPY.
var chainCopyColumns = strings.Fields(strings.ReplaceAll(chainColumns, ",", " "))

// CopyChains writes new chains by COPY in the transaction: the bulk path of
// loadgen.History (BENCHMARKS.md, "A year of history"), where one INSERT per
// chain was the generator's largest cost. COPY fires the row triggers an
// INSERT fires (the daily rollups, campaign spend: measured in the history
// test, which compares the rollups with the raw facts after it), so the
// derived rows stay exact. Unlike InsertChain it has no ON CONFLICT: a chain
// or nonce already stored fails the transaction. Statements held back
// (Append's, UpdateChains') are sent first, in their order.
func (t *tx) CopyChains(ctx context.Context, cs []attribution.Chain) error {
	if len(cs) == 0 {
		return t.err
	}
	if !t.begun || len(t.pending) > 0 {
		if err := t.send(ctx, &pgx.Batch{}); err != nil {
			return wrap(err, "copying chains")
		}
	}
	if t.err != nil {
		return t.err
	}
	_, err := t.conn.CopyFrom(ctx, pgx.Identifier{"chains"}, chainCopyColumns, pgx.CopyFromSlice(len(cs), func(i int) ([]any, error) {
		return chainArgs(cs[i]), nil
	}))
	if err != nil {
		t.err = err
	}
	return wrap(err, "copying chains")
}

// VacuumAnalyze does what autovacuum (PostgreSQL's default) does after a
// bulk load, at once: it vacuums each table with more dead rows than 50 and
// a fifth of its rows, or more rows inserted since its last vacuum than
// 1,000 and a fifth, and analyzes each with more rows changed than 50 and a
// tenth (autovacuum's default thresholds), on a connection of its own as the
// login role, which owns the tables (the pool's connections run as
// xpromo_app). It is the last step of loadgen.History's bulk load: the
// history's rollup rows are updated once per fact (stats_daily: 375,387 dead
// rows beside 1,301,389 live ones at scale 0.05) and its chains, lines and
// holds are inserted by the hundred thousand, which a server running
// autovacuum would not keep unvacuumed for long; CI's PostgreSQL runs with
// autovacuum off (BENCHMARKS.md, "A year of history", wip/full).
//
// A table the load did not write is left as it is, as autovacuum leaves
// it: vacuuming an empty table records it as known to be empty, and a
// statement prepared on it while it is small keeps a sequential scan as
// its generic plan after it has grown (idempotency_keys, read by every
// claim: 531 heap pages a claim after 14,000 keys, against 20 on a table
// the planner had never sized), until an analyze invalidates the plan,
// which on a server without autovacuum never comes.
func (db *DB) VacuumAnalyze(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return wrap(err, "connecting to vacuum")
	}
	defer conn.Close(ctx)
	if _, err = conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		return wrap(err, "vacuuming")
	}
	rows, err := conn.Query(ctx, `SELECT format('%I.%I', s.schemaname, s.relname),
  s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0) OR s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0),
  s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid ORDER BY 1`)
	if err != nil {
		return wrap(err, "vacuuming")
	}
	var stmts []string
	for rows.Next() {
		var table string
		var vacuum, analyze bool
		if err := rows.Scan(&table, &vacuum, &analyze); err != nil {
			rows.Close()
			return wrap(err, "vacuuming")
		}
		switch {
		case vacuum:
			stmts = append(stmts, "VACUUM (ANALYZE) "+table)
		case analyze:
			stmts = append(stmts, "ANALYZE "+table)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return wrap(err, "vacuuming")
	}
	// VACUUM runs outside a transaction block: a statement of its own.
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			return wrap(err, "vacuuming")
		}
	}
	return nil
}
