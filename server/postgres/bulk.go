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
