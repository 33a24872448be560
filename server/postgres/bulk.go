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

// Analyze takes the planner's statistics of every table (ANALYZE), on a
// connection of its own as the login role, which owns the tables (the
// pool's connections run as xpromo_app): the last step of loadgen.History's
// bulk load, as after any bulk load. A server running autovacuum analyzes a
// table after a tenth of it changed; CI's PostgreSQL runs with autovacuum
// off, where the history's reads were planned on the estimates of tables
// never analyzed (BENCHMARKS.md, "A year of history", wip/reads).
func (db *DB) Analyze(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return wrap(err, "connecting to analyze")
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SET statement_timeout = 0; ANALYZE")
	return wrap(err, "analyzing")
}
