package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/groupcommit"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
)

// tx implements ledger.Tx on one pooled connection, managing the
// transaction itself so that it costs no round trip of its own: BEGIN travels
// with the first statement, and Append's statement(s) are held back and sent
// with the next statement or, in the usual case, with COMMIT. A post of
// the ledger's group commit (or a lone post) thus takes two round trips:
// its three reads (find the keys, read the holds, lock the accounts) sent
// ahead together (ReadAhead), then the append with COMMIT; the claim path
// sends the same reads with its own (ClaimReads). Each statement is one
// whatever the number of rows (an append of 1,000 lines or more writes
// them by COPY).
type tx struct {
	conn    *pgx.Conn
	begin   string             // the BEGIN statement: read-write or read-only
	begun   bool               // BEGIN has been sent
	pending []*pgx.QueuedQuery // Append's statements, not sent yet
	err     error              // once set, the transaction can only roll back
	pre     *ledgerReads       // ledger reads sent ahead of their call (queueLedgerReads)
	// commitSent: COMMIT went out (with the pending statements); a failure
	// without the database's answer leaves the outcome unknown.
	commitSent bool
}

var (
	_ ledger.Tx        = (*tx)(nil)
	_ ledger.ReadAhead = (*tx)(nil)
)

// bulkIDs is the number of ids above which a lookup by a list of ids is
// written as a semi-join on unnest($1) rather than col IN ($1, …, $n).
//
// Statements are prepared and their plans cached per connection, so the SQL
// must suit every plan PostgreSQL may settle on:
//   - With one parameter per id, the generic plan knows the exact number of
//     ids: it costs what a custom plan costs, so it is cached after five
//     executions and never re-planned, and it is an index scan. (With
//     col = ANY($1), the generic plan guesses ten ids, looks dearer than a
//     custom plan for one, and PostgreSQL re-plans every execution: measured
//     at a tenth of the server's CPU on single operations.)
//   - For many ids the planner may prefer a sequential scan; filtered by
//     = ANY($1) in a generic plan, that walks the whole array for every row,
//     rows × ids comparisons (measured: 27 ms per 1,000-operation batch on
//     5,000 holds, growing with the table). A semi-join on unnest($1) is an
//     index nested loop or a hash join, never worse than linear, and one SQL
//     text for any number of ids.
const bulkIDs = 16

// lookup returns the condition "col IN ($1, …, $n)", or for many ids
// "col IN (SELECT unnest($1::text[]))", with its arguments.
func lookup(col string, ids []string) (string, []any) {
	if len(ids) > bulkIDs {
		return col + ` IN (SELECT unnest($1::text[]))`, []any{ids}
	}
	var sb strings.Builder
	sb.WriteString(col + " IN (")
	args := make([]any, len(ids))
	for i, id := range ids {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('$')
		sb.WriteString(strconv.Itoa(i + 1))
		args[i] = id
	}
	sb.WriteByte(')')
	return sb.String(), args
}

const (
	beginSQL         = "BEGIN ISOLATION LEVEL READ COMMITTED"
	beginReadOnlySQL = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
	commitSQL        = "COMMIT"
)

// send runs b in the transaction, preceded by BEGIN if not yet sent and by
// the pending statements, in one round trip.
func (t *tx) send(ctx context.Context, b *pgx.Batch) error {
	if t.err != nil {
		return t.err
	}
	all := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, 1+len(t.pending)+len(b.QueuedQueries))}
	if !t.begun {
		all.Queue(t.begin)
		t.begun = true
	}
	all.QueuedQueries = append(all.QueuedQueries, t.pending...)
	all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
	t.pending = nil
	if err := t.conn.SendBatch(ctx, all).Close(); err != nil {
		if !t.commitSent {
			// The database failed before COMMIT was sent: nothing
			// committed. Classified here, not only by inTx, because work
			// inside a unit of work (a keyed request's one transaction)
			// returns its statements' errors to the request, which must
			// answer them 503, not 500 (issue 31).
			if u := unavailable(ctx, err, t.conn.IsClosed(), true); u != nil {
				u.rerun = u.class != classTimeout
				err = u
			}
		}
		t.err = err
		return err
	}
	return nil
}

// Helpers for the domains' Tx methods. Each sends its statement pipelined
// with BEGIN and any held-back statements, in one round trip.

// exec runs a statement and returns the number of rows it affected.
func (t *tx) exec(ctx context.Context, sql string, args ...any) (int64, error) {
	var n int64
	b := &pgx.Batch{}
	b.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error {
		n = ct.RowsAffected()
		return nil
	})
	return n, t.send(ctx, b)
}

// query runs a query and calls scan for each row.
func (t *tx) query(ctx context.Context, sql string, args []any, scan func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return t.send(ctx, b)
}

// queryRow runs a query expected to return at most one row into dest; it
// returns pgx.ErrNoRows when there is none.
func (t *tx) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...).QueryRow(func(row pgx.Row) error { return row.Scan(dest...) })
	err := t.send(ctx, b)
	if errors.Is(err, pgx.ErrNoRows) {
		t.err = nil // not a failure of the transaction
		return pgx.ErrNoRows
	}
	return err
}

// commit sends the pending statements and COMMIT. A transaction that never
// sent anything has nothing to commit.
func (t *tx) commit(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if !t.begun && len(t.pending) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(commitSQL).Exec(func(ct pgconn.CommandTag) error {
		// COMMIT of a failed transaction answers ROLLBACK, not an error.
		if ct.String() != "COMMIT" {
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	t.commitSent = true
	if err := t.send(ctx, b); err != nil {
		return err
	}
	t.begun = false
	return nil
}

// rollback ends a transaction that did not commit. When that fails the
// connection's state is unknown, so it is closed (the pool then drops it).
func (t *tx) rollback(ctx context.Context) {
	if !t.begun {
		return
	}
	t.begun = false
	if t.conn.IsClosed() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := t.conn.Exec(rctx, "ROLLBACK"); err != nil {
		_ = t.conn.Close(rctx)
	}
}

func (t *tx) FindOperations(ctx context.Context, keys []string) (map[string]ledger.Record, error) {
	out := make(map[string]ledger.Record, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	if t.pre != nil && t.pre.ops != nil && slices.Equal(t.pre.keys, keys) {
		out, t.pre.ops = t.pre.ops, nil
		return out, nil
	}
	b := &pgx.Batch{}
	queueFindOperations(b, keys, out)
	if err := t.send(ctx, b); err != nil {
		return nil, wrap(err, "finding operations")
	}
	return out, nil
}

func queueFindOperations(b *pgx.Batch, keys []string, out map[string]ledger.Record) {
	cond, args := lookup("key", keys)
	b.Queue(`SELECT id, key, kind, request_hash, created_at FROM ledger_operations WHERE `+cond, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r ledger.Record
			var kind string
			if err := rows.Scan(&r.ID, &r.Key, &kind, &r.RequestHash, &r.CreatedAt); err != nil {
				return err
			}
			r.Kind, r.CreatedAt = ledger.Kind(kind), r.CreatedAt.UTC()
			out[r.Key] = r
		}
		return rows.Err()
	})
}

func (t *tx) OperationLines(ctx context.Context, operationIDs []string) (map[string][]ledger.Line, error) {
	out := make(map[string][]ledger.Line, len(operationIDs))
	if len(operationIDs) == 0 {
		return out, nil
	}
	b := &pgx.Batch{}
	cond, args := lookup("operation_id", operationIDs)
	b.Queue(selectLines+` WHERE `+cond+` ORDER BY operation_id, idx`, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			l, err := scanLine(rows)
			if err != nil {
				return err
			}
			out[l.OperationID] = append(out[l.OperationID], l)
		}
		return nil
	})
	if err := t.send(ctx, b); err != nil {
		return nil, wrap(err, "reading operation lines")
	}
	return out, nil
}

// Holds reads the holds with their resolutions. The resolution is a scalar
// subquery, not a join: its plan is always a primary-key lookup per hold,
// where a cached join plan could hash a whole table.
func (t *tx) Holds(ctx context.Context, ids []string) (map[string]ledger.Hold, error) {
	out := make(map[string]ledger.Hold, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	if t.pre != nil && t.pre.holds != nil && slices.Equal(t.pre.holdIDs, ids) {
		out, t.pre.holds = t.pre.holds, nil
		return out, nil
	}
	b := &pgx.Batch{}
	queueHolds(b, ids, out)
	if err := t.send(ctx, b); err != nil {
		return nil, wrap(err, "reading holds")
	}
	return out, nil
}

func queueHolds(b *pgx.Batch, ids []string, out map[string]ledger.Hold) {
	cond, args := lookup("h.id", ids)
	b.Queue(`SELECT h.id, h.advertiser_app_id, coalesce(h.publisher_app_id, ''), h.amount, coalesce(h.chain_id, ''), h.created_at,
  coalesce((SELECT r.resolution FROM escrow_resolutions r WHERE r.hold_id = h.id), '')
FROM escrow_holds h WHERE `+cond, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var h ledger.Hold
			if err := rows.Scan(&h.ID, &h.Advertiser, &h.Publisher, &h.Amount, &h.ChainID, &h.CreatedAt, &h.Resolution); err != nil {
				return err
			}
			h.CreatedAt = h.CreatedAt.UTC()
			out[h.ID] = h
		}
		return rows.Err()
	})
}

// lockAccounts locks the rows in id order. READ COMMITTED returns the latest
// committed version of a row once its lock is granted, so the heads read here
// are current however long the lock took.
func lockAccounts(ids []string) (string, []any) {
	cond, args := lookup("a.id", ids)
	// The head line's time (through the (account_id, seq) key) is the
	// account's LastAt: no line of it may be dated earlier. A subquery, not
	// a join: a join's generic plan, cached while ledger_lines was small,
	// hashed every line of the table on each call (BENCHMARKS.md, "Claims,
	// round 3").
	return `SELECT a.id, a.balance, a.seq, a.head,
  (SELECT l.created_at FROM ledger_lines l WHERE l.account_id = a.id AND l.seq = a.seq)
FROM ledger_accounts a WHERE ` + cond + ` ORDER BY a.id FOR UPDATE`, args
}

// createAccounts inserts accounts at zero, in id order, leaving existing ones
// alone. It runs on its own, outside any posting transaction.
const createAccounts = `INSERT INTO ledger_accounts (id, balance, seq, head)
SELECT id, 0, 0, $2::bytea FROM unnest($1::text[]) AS v(id) ORDER BY id
ON CONFLICT (id) DO NOTHING`

// LockAccounts locks the accounts with one SELECT … FOR UPDATE, in id order.
//
// When some do not exist yet, it does not create them here: rows created and
// locked by a second statement would be locked out of id order (after rows
// the first statement already holds), and two transactions doing that
// deadlock (measured: each deadlock costs deadlock_timeout, a second). Instead
// it fails with a missingAccounts error; InTx rolls back, creates the accounts
// in a transaction of their own, and runs fn again, which then finds and locks
// them all in one ordered statement. An account is created once in its life,
// so the extra attempt is rare, and a zero head without lines is a valid head.
func (t *tx) LockAccounts(ctx context.Context, ids []string) (map[string]ledger.Account, error) {
	out := make(map[string]ledger.Account, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	if t.pre != nil && t.pre.accounts != nil && slices.Equal(t.pre.accountIDs, ids) {
		out, t.pre.accounts = t.pre.accounts, nil
	} else {
		b := &pgx.Batch{}
		queueLockAccounts(b, ids, out)
		if err := t.send(ctx, b); err != nil {
			return nil, wrap(err, "locking accounts")
		}
	}
	if len(out) == len(ids) {
		return out, nil
	}
	m := &missingAccounts{}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			m.ids = append(m.ids, id)
		}
	}
	t.err = m // the caller cannot go on without these locks
	return nil, m
}

func queueLockAccounts(b *pgx.Batch, ids []string, out map[string]ledger.Account) {
	query, args := lockAccounts(ids)
	b.Queue(query, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var a ledger.Account
			var lastAt *time.Time
			if err := rows.Scan(&a.ID, &a.Balance, &a.Seq, &a.Head, &lastAt); err != nil {
				return err
			}
			if lastAt != nil {
				a.LastAt = lastAt.UTC()
			}
			out[a.ID] = a
		}
		return rows.Err()
	})
}

// ledgerReads are the reads ledger.Apply makes for some operations, sent
// ahead of Apply in the round trip of other statements (queueLedgerReads).
// Each result is handed once to the call with exactly the same arguments;
// any other call queries as usual. The reads are the ones Apply would make
// one or two round trips later in the same transaction, under READ
// COMMITTED: nothing of the transaction's own runs in between.
type ledgerReads struct {
	keys, holdIDs, accountIDs []string
	ops                       map[string]ledger.Record
	holds                     map[string]ledger.Hold
	accounts                  map[string]ledger.Account
}

// queueLedgerReads queues, on b, the reads ledger.Apply makes for ops that
// are posted for the first time: their keys, then the holds they open or
// resolve, then the locks of their accounts in id order (last: the caller
// puts them after any lock taken before the ledger's).
func (t *tx) queueLedgerReads(b *pgx.Batch, ops []ledger.Operation) {
	if len(ops) == 0 {
		return
	}
	r := &ledgerReads{}
	for _, op := range ops {
		r.keys = append(r.keys, op.Key)
		if op.Opens != nil {
			r.holdIDs = append(r.holdIDs, op.Opens.ID)
		}
		if op.Resolves != nil {
			r.holdIDs = append(r.holdIDs, op.Resolves.HoldID)
		}
		for _, p := range op.Postings {
			r.accountIDs = append(r.accountIDs, p.Account)
		}
	}
	r.holdIDs, r.accountIDs = sortedUnique(r.holdIDs), sortedUnique(r.accountIDs)
	r.ops = make(map[string]ledger.Record, len(r.keys))
	queueFindOperations(b, r.keys, r.ops)
	if len(r.holdIDs) > 0 {
		r.holds = make(map[string]ledger.Hold, len(r.holdIDs))
		queueHolds(b, r.holdIDs, r.holds)
	}
	if len(r.accountIDs) > 0 {
		r.accounts = make(map[string]ledger.Account, len(r.accountIDs))
		queueLockAccounts(b, r.accountIDs, r.accounts)
	}
	t.pre = r
}

// ReadAhead implements ledger.ReadAhead: the group commit's batch (or a
// lone post) sends Apply's three reads in one round trip, before Apply
// makes them. Reads already sent ahead and not yet used (ClaimReads) are
// left as they are.
func (t *tx) ReadAhead(ctx context.Context, ops []ledger.Operation) error {
	if p := t.pre; p != nil && (p.ops != nil || p.holds != nil || p.accounts != nil) {
		return nil
	}
	b := &pgx.Batch{}
	t.queueLedgerReads(b, ops)
	if err := t.send(ctx, b); err != nil {
		t.pre = nil
		return wrap(err, "reading ahead")
	}
	return nil
}

func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// missingAccounts is LockAccounts' request to InTx: create these accounts,
// then run the transaction again.
type missingAccounts struct{ ids []string }

func (m *missingAccounts) Error() string {
	return fmt.Sprintf("postgres: %d account(s) to create before locking, e.g. %q", len(m.ids), m.ids[0])
}

// Unwrap makes the error retryable for anyone classifying it, and, should
// it reach a client because the transaction could not run again (a keyed
// request's unit of work, the database lost meanwhile), a 503 unavailable
// with Retry-After rather than a 500 (issue 31).
func (m *missingAccounts) Unwrap() []error {
	return []error{ledger.ErrConflict, apperr.New(apperr.Unavailable, "the ledger accounts of this request were being created; retry after retry_after")}
}

const insertOperations = `INSERT INTO ledger_operations (id, key, kind, request_hash, created_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::timestamptz[])`

const insertHolds = `INSERT INTO escrow_holds (id, advertiser_app_id, publisher_app_id, amount, chain_id, created_at)
SELECT id, advertiser, NULLIF(publisher, ''), amount, NULLIF(chain, ''), created_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::timestamptz[])
  AS v(id, advertiser, publisher, amount, chain, created_at)`

const insertResolutions = `INSERT INTO escrow_resolutions (hold_id, resolution, operation_id, created_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])`

const insertLines = `INSERT INTO ledger_lines (` + lineColumns + `)
SELECT id, operation_id, idx, account_id, seq, type, amount, balance_after,
  NULLIF(counterparty, ''), NULLIF(chain, ''), NULLIF(note, ''), NULLIF(earn_mode, ''), created_at, prev_hash, hash
FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::bigint[], $6::text[], $7::bigint[], $8::bigint[],
  $9::text[], $10::text[], $11::text[], $12::text[], $13::timestamptz[], $14::bytea[], $15::bytea[])
  AS v(id, operation_id, idx, account_id, seq, type, amount, balance_after, counterparty, chain, note, earn_mode, created_at, prev_hash, hash)`

const updateAccounts = `UPDATE ledger_accounts a SET balance = v.balance, seq = v.seq, head = v.head
FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bytea[]) AS v(id, balance, seq, head)
WHERE a.id = v.id`

// smallRows is the number of rows up to which Append writes everything in
// one statement with one parameter per value: INSERT … VALUES in
// data-modifying CTEs, then UPDATE … FROM (VALUES …). Its SQL depends on the
// row counts only (a few dozen shapes in practice, each prepared once per
// connection), and its plan is cached and never re-planned. Larger batches use
// unnest arrays, one statement per table, whose re-planning on every execution
// (PostgreSQL prefers a custom plan when the generic one guesses 100 rows) is
// spread over many operations. Measured on single operations: about 20% less
// server CPU than unnest.
const smallRows = 8

// params writes rows tuples of width placeholders, from $next on, with the
// given casts (for VALUES lists outside an INSERT, whose types are unknown).
func params(sb *strings.Builder, next *int, rows int, casts ...string) {
	for r := range rows {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c, cast := range casts {
			if c > 0 {
				sb.WriteString(", ")
			}
			sb.WriteByte('$')
			sb.WriteString(strconv.Itoa(*next))
			sb.WriteString(cast)
			*next++
		}
		sb.WriteByte(')')
	}
}

// appendSmall queues Append's one statement for a few rows of each kind.
func (t *tx) appendSmall(b ledger.Batch) {
	var sb strings.Builder
	var args []any
	next := 1
	cte := func(name, table, columns string, rows int, width int) {
		if rows == 0 {
			return
		}
		if next == 1 {
			sb.WriteString("WITH ")
		} else {
			sb.WriteString(",\n")
		}
		sb.WriteString(name + " AS (INSERT INTO " + table + " (" + columns + ") VALUES ")
		params(&sb, &next, rows, make([]string, width)...)
		sb.WriteString(")")
	}
	cte("o", "ledger_operations", "id, key, kind, request_hash, created_at", len(b.Operations), 5)
	for _, o := range b.Operations {
		args = append(args, o.ID, o.Key, string(o.Kind), o.RequestHash, o.CreatedAt)
	}
	cte("h", "escrow_holds", "id, advertiser_app_id, publisher_app_id, amount, chain_id, created_at", len(b.Holds), 6)
	for _, h := range b.Holds {
		args = append(args, h.ID, h.Advertiser, nullable(h.Publisher), h.Amount, nullable(h.ChainID), h.CreatedAt)
	}
	cte("r", "escrow_resolutions", "hold_id, resolution, operation_id, created_at", len(b.Resolutions), 4)
	for _, r := range b.Resolutions {
		args = append(args, r.HoldID, r.Resolution, r.OperationID, r.CreatedAt)
	}
	cte("l", "ledger_lines", lineColumns, len(b.Lines), 15)
	for i := range b.Lines {
		args = append(args, lineValues(&b.Lines[i])...)
	}
	n := len(b.Accounts)
	sb.WriteString("\nUPDATE ledger_accounts a SET balance = v.balance, seq = v.seq, head = v.head FROM (VALUES ")
	params(&sb, &next, n, "::text", "::bigint", "::bigint", "::bytea")
	sb.WriteString(") AS v(id, balance, seq, head) WHERE a.id = v.id")
	for _, a := range b.Accounts {
		args = append(args, a.ID, a.Balance, a.Seq, a.Head)
	}
	batch := &pgx.Batch{}
	batch.Queue(sb.String(), args...).Exec(func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() != int64(n) {
			return fmt.Errorf("postgres: %d of %d account heads updated", ct.RowsAffected(), n)
		}
		return nil
	})
	t.pending = append(t.pending, batch.QueuedQueries...)
}

// lineValues is a line's values in lineColumns' order, "" as NULL.
func lineValues(l *ledger.Line) []any {
	return []any{l.ID, l.OperationID, int32(l.Index), l.Account, l.Seq, string(l.Type), l.Amount, l.BalanceAfter,
		nullable(l.Counterparty), nullable(l.ChainID), nullable(l.Note), nullable(string(l.EarnMode)),
		l.CreatedAt, l.PrevHash, l.Hash}
}

// nullable maps "" to SQL NULL for the optional text columns.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// copyLines is the number of lines from which Append writes them with COPY
// rather than INSERT … SELECT FROM unnest. A sweep batch's lines are its
// largest statement; COPY (binary, no parse of arrays, no plan) costs less
// server time per row but round trips of its own (the operations it
// references are sent first, then COPY's two), so smaller appends keep
// riding with COMMIT. Measured alone (BENCHMARKS.md "The ledger's write
// path, round 2"): 2,500 lines a quarter cheaper, 1,000 a tenth, 200 the same.
const copyLines = 1000

// Append queues the inserts and the head update. They are sent with the next
// statement or with COMMIT, so a lost race on a unique key (ErrConflict)
// surfaces from there; InTx retries it all the same.
//
// A few rows go in one statement (appendSmall). More go in one statement per
// table, INSERT … SELECT FROM unnest(arrays) and UPDATE … FROM unnest. From
// copyLines lines on, the operations, holds and resolutions are sent at once
// (with BEGIN and anything held back: a lost key or resolution race surfaces
// here, as ErrConflict), then the lines by COPY; the head update still waits
// for COMMIT.
func (t *tx) Append(ctx context.Context, b ledger.Batch) error {
	if t.err != nil {
		return t.err
	}
	if len(b.Accounts) > 0 && max(len(b.Operations), len(b.Holds), len(b.Resolutions), len(b.Lines), len(b.Accounts)) <= smallRows {
		t.appendSmall(b)
		return nil
	}
	batch := &pgx.Batch{}
	if n := len(b.Operations); n > 0 {
		id, key, kind, hash, at := make([]string, n), make([]string, n), make([]string, n), make([][]byte, n), make([]time.Time, n)
		for i, o := range b.Operations {
			id[i], key[i], kind[i], hash[i], at[i] = o.ID, o.Key, string(o.Kind), o.RequestHash, o.CreatedAt
		}
		batch.Queue(insertOperations, id, key, kind, hash, at)
	}
	if n := len(b.Holds); n > 0 {
		id, adv, pub, amount, chain, at := make([]string, n), make([]string, n), make([]string, n), make([]int64, n), make([]string, n), make([]time.Time, n)
		for i, h := range b.Holds {
			id[i], adv[i], pub[i], amount[i], chain[i], at[i] = h.ID, h.Advertiser, h.Publisher, h.Amount, h.ChainID, h.CreatedAt
		}
		batch.Queue(insertHolds, id, adv, pub, amount, chain, at)
	}
	if n := len(b.Resolutions); n > 0 {
		hold, res, op, at := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
		for i, r := range b.Resolutions {
			hold[i], res[i], op[i], at[i] = r.HoldID, r.Resolution, r.OperationID, r.CreatedAt
		}
		batch.Queue(insertResolutions, hold, res, op, at)
	}
	if n := len(b.Lines); n >= copyLines {
		if err := t.send(ctx, batch); err != nil {
			return wrap(err, "appending operations")
		}
		if err := t.copyLines(ctx, b.Lines); err != nil {
			return err
		}
		batch = &pgx.Batch{}
	} else if n > 0 {
		c := lineArrays(b.Lines)
		batch.Queue(insertLines, c.id, c.op, c.idx, c.account, c.seq, c.typ, c.amount, c.balance,
			c.counterparty, c.chain, c.note, c.mode, c.at, c.prev, c.hash)
	}
	if n := len(b.Accounts); n > 0 {
		id, balance, seq, head := make([]string, n), make([]int64, n), make([]int64, n), make([][]byte, n)
		for i, a := range b.Accounts {
			id[i], balance[i], seq[i], head[i] = a.ID, a.Balance, a.Seq, a.Head
		}
		batch.Queue(updateAccounts, id, balance, seq, head).Exec(func(ct pgconn.CommandTag) error {
			if ct.RowsAffected() != int64(n) {
				return fmt.Errorf("postgres: %d of %d account heads updated", ct.RowsAffected(), n)
			}
			return nil
		})
	}
	t.pending = append(t.pending, batch.QueuedQueries...)
	return nil
}

// lineCopyColumns are ledger_lines' columns in lineColumns' order, for COPY.
var lineCopyColumns = strings.Split(lineColumns, ", ")

// copyLines writes lines by COPY in the transaction, which Append has begun
// and whose held-back statements it has sent, so that the operations the
// lines reference are written first.
func (t *tx) copyLines(ctx context.Context, lines []ledger.Line) error {
	_, err := t.conn.CopyFrom(ctx, pgx.Identifier{"ledger_lines"}, lineCopyColumns, pgx.CopyFromSlice(len(lines), func(i int) ([]any, error) {
		return lineValues(&lines[i]), nil
	}))
	if err != nil {
		t.err = err
	}
	return wrap(err, "copying ledger lines")
}

// lineColumnArrays holds lines column by column, for unnest.
type lineColumnArrays struct {
	id, op, account, typ, counterparty, chain, note, mode []string
	idx                                                   []int32
	seq, amount, balance                                  []int64
	at                                                    []time.Time
	prev, hash                                            [][]byte
}

func lineArrays(lines []ledger.Line) lineColumnArrays {
	n := len(lines)
	c := lineColumnArrays{
		id: make([]string, n), op: make([]string, n), account: make([]string, n), typ: make([]string, n),
		counterparty: make([]string, n), chain: make([]string, n), note: make([]string, n), mode: make([]string, n),
		idx: make([]int32, n), seq: make([]int64, n), amount: make([]int64, n), balance: make([]int64, n),
		at: make([]time.Time, n), prev: make([][]byte, n), hash: make([][]byte, n),
	}
	for i, l := range lines {
		c.id[i], c.op[i], c.account[i], c.typ[i] = l.ID, l.OperationID, l.Account, string(l.Type)
		c.counterparty[i], c.chain[i], c.note[i], c.mode[i] = l.Counterparty, l.ChainID, l.Note, string(l.EarnMode)
		c.idx[i], c.seq[i], c.amount[i], c.balance[i] = int32(l.Index), l.Seq, l.Amount, l.BalanceAfter
		c.at[i], c.prev[i], c.hash[i] = l.CreatedAt, l.PrevHash, l.Hash
	}
	return c
}

// shared is a transaction that several units share (package groupcommit),
// on one pooled connection. SAVEPOINT travels with a unit's first
// statement; RELEASE SAVEPOINT carries the unit's held-back statements
// (Append's), so that their failure is the unit's own; the pipelined ledger
// reads (t.pre) never pass from one unit to the next.
type shared struct {
	db   *DB
	conn *pgxpool.Conn
	t    *tx
	sp   *pgx.QueuedQuery // this unit's SAVEPOINT while not yet sent
}

// sharedLockTimeout bounds a unit's wait for a row another shared
// transaction locked: that one commits only once its current unit ends, so
// two batches can wait on each other (PostgreSQL would find the deadlock
// after deadlock_timeout, a second). Past it the unit is rolled back to its
// savepoint and runs again alone (lock_not_available is retryable there).
const sharedLockTimeout = "SET LOCAL lock_timeout = '50ms'"

const codeLockNotAvailable = "55P03"

func (db *DB) beginShared(ctx context.Context) (groupcommit.Shared[storage.Tx], error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, wrap(err, "acquiring a connection")
	}
	s := &shared{db: db, conn: conn, t: &tx{conn: conn.Conn(), begin: beginSQL}}
	b := &pgx.Batch{}
	b.Queue(sharedLockTimeout)
	s.t.pending = append(s.t.pending, b.QueuedQueries...)
	return s, nil
}

func (s *shared) Tx() storage.Tx { return s.t }

func (s *shared) Savepoint(context.Context) error {
	if s.t.err != nil {
		return s.t.err
	}
	s.t.pre = nil
	b := &pgx.Batch{}
	s.sp = b.Queue("SAVEPOINT unit")
	s.t.pending = append(s.t.pending, s.sp)
	return nil
}

func (s *shared) Release(ctx context.Context) error {
	s.t.pre = nil
	b := &pgx.Batch{}
	b.Queue("RELEASE SAVEPOINT unit")
	if err := s.t.send(ctx, b); err != nil {
		return wrap(err, "releasing a unit's savepoint")
	}
	s.sp = nil
	return nil
}

// RollbackTo undoes the unit. When it failed for want of accounts, it
// creates them in the shared transaction (InTx does so between two runs),
// so that the unit's run alone after the batch finds them: on a connection
// of its own, the insert could wait, in Go where PostgreSQL cannot see it,
// for a pooled connection held by a transaction waiting for this batch's
// locks.
func (s *shared) RollbackTo(ctx context.Context, cause error) error {
	if s.t.conn.IsClosed() {
		return errors.New("postgres: the shared transaction's connection closed")
	}
	i := -1
	if s.sp != nil {
		i = slices.Index(s.t.pending, s.sp)
	}
	s.t.err, s.t.pre, s.sp = nil, nil, nil
	b := &pgx.Batch{}
	if i >= 0 {
		// Nothing of the unit reached the database: drop its statements.
		s.t.pending = s.t.pending[:i]
	} else {
		s.t.pending = nil
		b.Queue("ROLLBACK TO SAVEPOINT unit")
		b.Queue("RELEASE SAVEPOINT unit")
	}
	var m *missingAccounts
	if errors.As(cause, &m) {
		b.Queue(createAccounts, m.ids, ledger.GenesisHash)
	}
	if len(b.QueuedQueries) == 0 {
		return nil
	}
	return wrap(s.t.send(ctx, b), "rolling back a unit")
}

func (s *shared) Commit(ctx context.Context) error {
	if err := s.t.commit(ctx); err != nil {
		return wrap(err, "commit")
	}
	s.conn.Release()
	s.conn = nil
	return nil
}

func (s *shared) Rollback(ctx context.Context) {
	if s.conn == nil {
		return
	}
	s.t.rollback(ctx)
	s.conn.Release()
	s.conn = nil
}

// sharedRetryable is a unit's failure that it cures by running again alone.
func sharedRetryable(err error) bool {
	var pe *pgconn.PgError
	return retryable(err) || errors.As(err, &pe) && pe.Code == codeLockNotAvailable
}

// commitUnknown reports a failed COMMIT that may have committed: the
// database did not answer it (an answer, even ROLLBACK, is certain; so is
// a failure before anything was sent).
func commitUnknown(err error) bool {
	var pe *pgconn.PgError
	return !errors.As(err, &pe) && !errors.Is(err, pgx.ErrTxCommitRollback) && !pgconn.SafeToRetry(err)
}
