package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/xpromo/xpromo/server/groupcommit"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
)

// tx implements ledger.Tx on the writer connection.
type tx struct {
	tx    *sql.Tx
	owner string // the instance holding the file when tx began ("" if none)
}

// placeholders returns "?,?,…" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (t *tx) FindOperations(ctx context.Context, keys []string) (map[string]ledger.Record, error) {
	out := map[string]ledger.Record{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT id, key, kind, request_hash, created_at FROM ledger_operations WHERE key IN (`+placeholders(len(keys))+`)`, anys(keys)...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r ledger.Record
		var at int64
		if err := rows.Scan(&r.ID, &r.Key, &r.Kind, &r.RequestHash, &at); err != nil {
			return nil, wrap(err)
		}
		r.CreatedAt = fromMicros(at)
		out[r.Key] = r
	}
	return out, wrap(rows.Err())
}

func (t *tx) OperationLines(ctx context.Context, operationIDs []string) (map[string][]ledger.Line, error) {
	out := map[string][]ledger.Line{}
	if len(operationIDs) == 0 {
		return out, nil
	}
	rows, err := t.tx.QueryContext(ctx, selectLines+` WHERE operation_id IN (`+placeholders(len(operationIDs))+`) ORDER BY operation_id, idx`, anys(operationIDs)...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLine(rows)
		if err != nil {
			return nil, err
		}
		out[l.OperationID] = append(out[l.OperationID], l)
	}
	return out, wrap(rows.Err())
}

// LockAccounts needs no row locks: the transaction began IMMEDIATE and holds
// the database's only write lock. Missing accounts are created at zero.
func (t *tx) LockAccounts(ctx context.Context, ids []string) (map[string]ledger.Account, error) {
	out := make(map[string]ledger.Account, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	// The head line's time (through the (account_id, seq) key) is the
	// account's LastAt: no line of it may be dated earlier.
	rows, err := t.tx.QueryContext(ctx, `SELECT a.id, a.balance, a.seq, a.head, coalesce(l.created_at, 0) FROM ledger_accounts a
LEFT JOIN ledger_lines l ON l.account_id = a.id AND l.seq = a.seq WHERE a.id IN (`+placeholders(len(ids))+`)`, anys(ids)...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a ledger.Account
		var lastAt int64
		if err := rows.Scan(&a.ID, &a.Balance, &a.Seq, &a.Head, &lastAt); err != nil {
			return nil, wrap(err)
		}
		if lastAt != 0 {
			a.LastAt = fromMicros(lastAt)
		}
		out[a.ID] = a
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err)
	}
	var missing []any
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			missing = append(missing, id, ledger.GenesisHash)
			out[id] = ledger.Account{ID: id, Head: ledger.GenesisHash}
		}
	}
	if len(missing) > 0 {
		values := strings.TrimSuffix(strings.Repeat("(?, 0, 0, ?),", len(missing)/2), ",")
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO ledger_accounts (id, balance, seq, head) VALUES `+values, missing...); err != nil {
			return nil, wrap(err)
		}
	}
	return out, nil
}

func (t *tx) Holds(ctx context.Context, ids []string) (map[string]ledger.Hold, error) {
	out := map[string]ledger.Hold{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := t.tx.QueryContext(ctx, selectHolds+` WHERE h.id IN (`+placeholders(len(ids))+`)`, anys(ids)...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		h, err := scanHold(rows)
		if err != nil {
			return nil, err
		}
		out[h.ID] = h
	}
	return out, wrap(rows.Err())
}

// rowsPerInsert keeps multi-row inserts under SQLite's limit of bound
// variables per statement.
const rowsPerInsert = 500

// insert appends rows with multi-row INSERT statements.
func (t *tx) insert(ctx context.Context, table, columns string, n, width int, args func(i int) []any) error {
	row := "(" + placeholders(width) + "),"
	for start := 0; start < n; start += rowsPerInsert {
		end := min(n, start+rowsPerInsert)
		vals := make([]any, 0, (end-start)*width)
		for i := start; i < end; i++ {
			vals = append(vals, args(i)...)
		}
		q := "INSERT INTO " + table + " (" + columns + ") VALUES " + strings.TrimSuffix(strings.Repeat(row, end-start), ",")
		if _, err := t.tx.ExecContext(ctx, q, vals...); err != nil {
			return wrap(err)
		}
	}
	return nil
}

func (t *tx) Append(ctx context.Context, b ledger.Batch) error {
	if err := t.insert(ctx, "ledger_operations", "id, key, kind, request_hash, created_at", len(b.Operations), 5, func(i int) []any {
		o := b.Operations[i]
		return []any{o.ID, o.Key, string(o.Kind), o.RequestHash, micros(o.CreatedAt)}
	}); err != nil {
		return err
	}
	if err := t.insert(ctx, "escrow_holds", "id, advertiser_app_id, publisher_app_id, amount, chain_id, created_at", len(b.Holds), 6, func(i int) []any {
		h := b.Holds[i]
		return []any{h.ID, h.Advertiser, null(h.Publisher), h.Amount, null(h.ChainID), micros(h.CreatedAt)}
	}); err != nil {
		return err
	}
	if err := t.insert(ctx, "escrow_resolutions", "hold_id, resolution, operation_id, created_at", len(b.Resolutions), 4, func(i int) []any {
		r := b.Resolutions[i]
		return []any{r.HoldID, r.Resolution, r.OperationID, micros(r.CreatedAt)}
	}); err != nil {
		return err
	}
	if err := t.insert(ctx, "ledger_lines", lineColumns, len(b.Lines), 15, func(i int) []any {
		l := b.Lines[i]
		return []any{l.ID, l.OperationID, l.Index, l.Account, l.Seq, string(l.Type), l.Amount, l.BalanceAfter,
			null(l.Counterparty), null(l.ChainID), null(l.Note), null(string(l.EarnMode)), micros(l.CreatedAt), l.PrevHash, l.Hash}
	}); err != nil {
		return err
	}
	for _, a := range b.Accounts {
		if _, err := t.tx.ExecContext(ctx, `UPDATE ledger_accounts SET balance = ?, seq = ?, head = ? WHERE id = ?`, a.Balance, a.Seq, a.Head, a.ID); err != nil {
			return wrap(err)
		}
	}
	return nil
}

// shared is a write transaction that several units share (package
// groupcommit): many claims' writes under one COMMIT, one fsync.
type shared struct {
	t *tx
}

func (db *DB) beginShared(ctx context.Context) (groupcommit.Shared[storage.Tx], error) {
	sqlTx, err := db.writer.BeginTx(ctx, nil) // BEGIN IMMEDIATE, from _txlock
	if err != nil {
		return nil, wrap(err)
	}
	return &shared{t: &tx{tx: sqlTx, owner: db.ownerID()}}, nil
}

func (s *shared) Tx() storage.Tx { return s.t }

func (s *shared) Savepoint(ctx context.Context) error {
	_, err := s.t.tx.ExecContext(ctx, "SAVEPOINT unit")
	return wrap(err)
}

// Release fails if SQLite rolled the whole transaction back on its own (it
// may on an I/O error or a full disk): the savepoint is gone then, and the
// batch must not go on in autocommit mode.
func (s *shared) Release(ctx context.Context) error {
	_, err := s.t.tx.ExecContext(ctx, "RELEASE SAVEPOINT unit")
	return wrap(err)
}

func (s *shared) RollbackTo(ctx context.Context, _ error) error {
	if _, err := s.t.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT unit"); err != nil {
		return wrap(err)
	}
	_, err := s.t.tx.ExecContext(ctx, "RELEASE SAVEPOINT unit")
	return wrap(err)
}

func (s *shared) Commit(context.Context) error { return wrap(s.t.tx.Commit()) }

func (s *shared) Rollback(context.Context) { s.t.tx.Rollback() }
