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

// VacuumAnalyze vacuums every table and takes the planner's statistics
// (VACUUM (ANALYZE)), on a connection of its own as the login role, which
// owns the tables (the pool's connections run as xpromo_app): the last step
// of loadgen.History's bulk load. It is what a server running autovacuum
// (PostgreSQL's default) gets after a bulk load: a table is vacuumed once a
// fifth of it is dead rows or a fifth of it was inserted since, and
// analyzed after a tenth changed. The history's rollup rows are updated once
// per fact (stats_daily: 375,387 dead rows beside 1,301,389 live ones at
// scale 0.05), and its lines, chains and holds were never vacuumed, so
// without it the full store's write paths ran on dead row versions and
// unset visibility maps that no production store keeps for long. CI's
// PostgreSQL runs with autovacuum off (BENCHMARKS.md, "A year of history").
func (db *DB) VacuumAnalyze(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return wrap(err, "connecting to vacuum")
	}
	defer conn.Close(ctx)
	// VACUUM runs outside a transaction block: a statement of its own.
	if _, err = conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		return wrap(err, "vacuuming")
	}
	_, err = conn.Exec(ctx, "VACUUM (ANALYZE)")
	return wrap(err, "vacuuming")
}
