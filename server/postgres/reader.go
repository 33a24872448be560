package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/ledger"
)

const lineColumns = "id, operation_id, idx, account_id, seq, type, amount, balance_after, counterparty_app_id, chain_id, note, earn_mode, created_at, prev_hash, hash"

// selectLines reads lines with "" for NULL, as the ledger represents them.
const selectLines = `SELECT id, operation_id, idx, account_id, seq, type, amount, balance_after,
  coalesce(counterparty_app_id, ''), coalesce(chain_id, ''), coalesce(note, ''), coalesce(earn_mode, ''),
  created_at, prev_hash, hash
FROM ledger_lines`

// querier is the pool, or a connection inside a snapshot transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// reader implements ledger.Reader on a querier; DB embeds one on its read
// pool.
type reader struct{ q querier }

// Snapshot implements storage.Store: fn reads the ledger in one REPEATABLE
// READ, READ ONLY transaction, so a whole-ledger check sees one point in time
// even while the server keeps writing.
func (db *DB) Snapshot(ctx context.Context, fn func(ledger.Reader) error) error {
	conn, err := db.readPool.Acquire(ctx)
	if err != nil {
		return wrap(err, "acquiring a connection")
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return wrap(err, "beginning a snapshot")
	}
	defer conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	return fn(reader{conn})
}

func scanLine(rows pgx.Rows) (ledger.Line, error) {
	var l ledger.Line
	var idx int32
	var typ, mode string
	err := rows.Scan(&l.ID, &l.OperationID, &idx, &l.Account, &l.Seq, &typ, &l.Amount, &l.BalanceAfter,
		&l.Counterparty, &l.ChainID, &l.Note, &mode, &l.CreatedAt, &l.PrevHash, &l.Hash)
	l.Index, l.Type, l.EarnMode, l.CreatedAt = int(idx), ledger.LineType(typ), ledger.EarnMode(mode), l.CreatedAt.UTC()
	return l, err
}

func (r reader) Account(ctx context.Context, id string) (ledger.Account, error) {
	a := ledger.Account{ID: id}
	err := r.q.QueryRow(ctx, `SELECT balance, seq, head FROM ledger_accounts WHERE id = $1`, id).Scan(&a.Balance, &a.Seq, &a.Head)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Account{ID: id, Head: ledger.GenesisHash}, nil
	}
	if err != nil {
		return ledger.Account{}, wrap(err, "reading account")
	}
	return a, nil
}

// Lines reads a page as a keyset range on (account_id, seq): the dates
// become sequence bounds, each the first line at or after the date (a seek
// on (account_id, created_at, seq)), since an account's lines are in time
// order as well (ledger.Account.LastAt). No page walks the lines before it.
func (r reader) Lines(ctx context.Context, account string, q ledger.LineQuery) ([]ledger.Line, error) {
	query, args := linesQuery(account, q)
	rows, err := r.q.Query(ctx, query, args...)
	if err != nil {
		return nil, wrap(err, "reading lines")
	}
	defer rows.Close()
	out := []ledger.Line{}
	for rows.Next() {
		l, err := scanLine(rows)
		if err != nil {
			return nil, wrap(err, "reading lines")
		}
		out = append(out, l)
	}
	return out, wrap(rows.Err(), "reading lines")
}

// linesQuery is the page query of Lines. With no line at or after From the
// lower bound is NULL and the page is empty; with none at or after Before
// the upper bound is unbounded. The outer time terms only guard lines
// written before the time order was kept; the bounds on seq do the work, and
// unindexedTime keeps the planner from reading the range by time and sorting
// it (which it prefers when it cannot see the bounds' values).
const unindexedTime = `(created_at + interval '0 s')`

func linesQuery(account string, q ledger.LineQuery) (string, []any) {
	var sb strings.Builder
	args := []any{account, q.AfterSeq}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	firstSeqAt := func(at string) string {
		return `(SELECT seq FROM ledger_lines WHERE account_id = $1 AND created_at >= ` + at + ` ORDER BY created_at, seq LIMIT 1)`
	}
	// One lower bound on seq: past the cursor and, with From, from the first
	// line at or after it (none: the bound is past every line).
	if q.From.IsZero() {
		sb.WriteString(selectLines + ` WHERE account_id = $1 AND seq > $2`)
	} else {
		from := arg(q.From)
		sb.WriteString(selectLines + ` WHERE account_id = $1 AND seq > greatest($2::bigint, coalesce(` + firstSeqAt(from) + ` - 1, 9223372036854775807))`)
		sb.WriteString(" AND " + unindexedTime + " >= " + from)
	}
	if !q.Before.IsZero() {
		before := arg(q.Before)
		sb.WriteString(" AND seq < coalesce(" + firstSeqAt(before) + ", 9223372036854775807) AND " + unindexedTime + " < " + before)
	}
	sb.WriteString(" ORDER BY seq")
	if q.Limit > 0 {
		sb.WriteString(" LIMIT " + arg(q.Limit))
	}
	return sb.String(), args
}

// Totals reads a wallet's totals by type and earn mode (migration 00041's
// wallet_totals, kept by a trigger on its lines), ordered by type and earn
// mode with no earn mode ("") first, as the SQLite store does.
func (r reader) Totals(ctx context.Context, account string) ([]ledger.Total, error) {
	if err := walletOnly(account); err != nil {
		return nil, err
	}
	rows, err := r.q.Query(ctx, selectWalletTotals, account)
	if err != nil {
		return nil, wrap(err, "reading totals")
	}
	defer rows.Close()
	var out []ledger.Total
	for rows.Next() {
		t, err := scanTotal(rows)
		if err != nil {
			return nil, wrap(err, "reading totals")
		}
		out = append(out, t)
	}
	return out, wrap(rows.Err(), "reading totals")
}

const selectWalletTotals = `SELECT type, earn_mode, amount, count FROM wallet_totals WHERE account_id = $1 ORDER BY type, earn_mode`

func scanTotal(rows pgx.Rows) (ledger.Total, error) {
	var t ledger.Total
	var typ, mode string
	err := rows.Scan(&typ, &mode, &t.Amount, &t.Count)
	t.Type, t.EarnMode = ledger.LineType(typ), ledger.EarnMode(mode)
	return t, err
}

// walletOnly refuses totals of an account other than a wallet: only
// wallets' are kept (wallet_totals).
func walletOnly(account string) error {
	if ledger.ClassOf(account) != ledger.ClassWallet {
		return fmt.Errorf("postgres: totals are kept for wallets only, not %q", account)
	}
	return nil
}

// Scan streams the lines: one query, read row by row, never all in memory.
func (r reader) Scan(ctx context.Context, fn func(ledger.Line) error) error {
	rows, err := r.q.Query(ctx, selectLines+` ORDER BY account_id, seq`)
	if err != nil {
		return wrap(err, "scanning lines")
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLine(rows)
		if err != nil {
			return wrap(err, "scanning lines")
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return wrap(rows.Err(), "scanning lines")
}

func (r reader) Accounts(ctx context.Context) ([]ledger.Account, error) {
	rows, err := r.q.Query(ctx, `SELECT id, balance, seq, head FROM ledger_accounts ORDER BY id`)
	if err != nil {
		return nil, wrap(err, "reading accounts")
	}
	defer rows.Close()
	var out []ledger.Account
	for rows.Next() {
		var a ledger.Account
		if err := rows.Scan(&a.ID, &a.Balance, &a.Seq, &a.Head); err != nil {
			return nil, wrap(err, "reading accounts")
		}
		out = append(out, a)
	}
	return out, wrap(rows.Err(), "reading accounts")
}

func (r reader) AllHolds(ctx context.Context) ([]ledger.Hold, error) {
	rows, err := r.q.Query(ctx, `SELECT h.id, h.advertiser_app_id, coalesce(h.publisher_app_id, ''), h.amount, coalesce(h.chain_id, ''),
  h.created_at, coalesce(r.resolution, '')
FROM escrow_holds h LEFT JOIN escrow_resolutions r ON r.hold_id = h.id
ORDER BY h.created_at, h.id`)
	if err != nil {
		return nil, wrap(err, "reading holds")
	}
	defer rows.Close()
	var out []ledger.Hold
	for rows.Next() {
		var h ledger.Hold
		if err := rows.Scan(&h.ID, &h.Advertiser, &h.Publisher, &h.Amount, &h.ChainID, &h.CreatedAt, &h.Resolution); err != nil {
			return nil, wrap(err, "reading holds")
		}
		h.CreatedAt = h.CreatedAt.UTC()
		out = append(out, h)
	}
	return out, wrap(rows.Err(), "reading holds")
}

// OperationIDs streams the operations' ids (ledger.Reader).
func (r reader) OperationIDs(ctx context.Context, fn func(string) error) error {
	rows, err := r.q.Query(ctx, `SELECT id FROM ledger_operations ORDER BY id`)
	if err != nil {
		return wrap(err, "reading operations")
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return wrap(err, "reading operations")
		}
		if err := fn(id); err != nil {
			return err
		}
	}
	return wrap(rows.Err(), "reading operations")
}
