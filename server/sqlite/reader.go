package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/xpromo/xpromo/server/ledger"
)

const lineColumns = "id, operation_id, idx, account_id, seq, type, amount, balance_after, counterparty_app_id, chain_id, note, earn_mode, created_at, prev_hash, hash"

const selectLines = "SELECT " + lineColumns + " FROM ledger_lines"

const selectHolds = `SELECT h.id, h.advertiser_app_id, h.publisher_app_id, h.amount, h.chain_id, h.created_at, r.resolution
FROM escrow_holds h LEFT JOIN escrow_resolutions r ON r.hold_id = h.id`

type scanner interface{ Scan(dest ...any) error }

// querier is the read pool or a read transaction (a snapshot).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// reader implements ledger.Reader on a querier.
type reader struct{ q querier }

// Snapshot runs fn with a Reader whose reads all see the database at one
// point in time (a WAL read transaction), so a whole-ledger check such as
// Verify is not confused by writes landing between its queries.
func (db *DB) Snapshot(ctx context.Context, fn func(ledger.Reader) error) error {
	tx, err := db.readPool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return wrap(err)
	}
	defer tx.Rollback()
	return fn(reader{tx})
}

func scanLine(s scanner) (ledger.Line, error) {
	var l ledger.Line
	var counterparty, chain, note, mode sql.NullString
	var at int64
	err := s.Scan(&l.ID, &l.OperationID, &l.Index, &l.Account, &l.Seq, &l.Type, &l.Amount, &l.BalanceAfter,
		&counterparty, &chain, &note, &mode, &at, &l.PrevHash, &l.Hash)
	if err != nil {
		return l, wrap(err)
	}
	l.Counterparty, l.ChainID, l.Note, l.EarnMode = counterparty.String, chain.String, note.String, ledger.EarnMode(mode.String)
	l.CreatedAt = fromMicros(at)
	return l, nil
}

func scanHold(s scanner) (ledger.Hold, error) {
	var h ledger.Hold
	var publisher, chain, resolution sql.NullString
	var at int64
	if err := s.Scan(&h.ID, &h.Advertiser, &publisher, &h.Amount, &chain, &at, &resolution); err != nil {
		return h, wrap(err)
	}
	h.Publisher, h.ChainID, h.Resolution = publisher.String, chain.String, resolution.String
	h.CreatedAt = fromMicros(at)
	return h, nil
}

func (r reader) Account(ctx context.Context, id string) (ledger.Account, error) {
	a := ledger.Account{ID: id}
	err := r.q.QueryRowContext(ctx, `SELECT balance, seq, head FROM ledger_accounts WHERE id = ?`, id).Scan(&a.Balance, &a.Seq, &a.Head)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Account{ID: id, Head: ledger.GenesisHash}, nil
	}
	return a, wrap(err)
}

// Lines reads a page as a keyset range on (account_id, seq): the dates
// become sequence bounds, each the first line at or after the date (a seek
// on (account_id, created_at, seq)), since an account's lines are in time
// order as well (ledger.Account.LastAt). No page walks the lines before it.
func (r reader) Lines(ctx context.Context, account string, q ledger.LineQuery) ([]ledger.Line, error) {
	query, args := linesQuery(account, q)
	rows, err := r.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	out := []ledger.Line{}
	for rows.Next() {
		l, err := scanLine(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, wrap(rows.Err())
}

// firstSeqAt is the sequence number of the account's first line at or
// after an instant (NULL when there is none).
const firstSeqAt = `(SELECT seq FROM ledger_lines WHERE account_id = ? AND created_at >= ? ORDER BY created_at, seq LIMIT 1)`

// linesQuery is the page query of Lines. With no line at or after From the
// lower bound is NULL and the page is empty; with none at or after Before
// the upper bound is unbounded. The unary + keeps SQLite from choosing the
// time index for the outer query's own time terms (which only guard lines
// written before the time order was kept).
func linesQuery(account string, q ledger.LineQuery) (string, []any) {
	// One lower bound on seq (SQLite seeks on one): past the cursor and,
	// with From, from the first line at or after it.
	where := []string{"account_id = ?", "seq > ?"}
	args := []any{account, q.AfterSeq}
	if !q.From.IsZero() {
		where = []string{"account_id = ?", "seq > max(?, coalesce(" + firstSeqAt + " - 1, 9223372036854775807))", "+created_at >= ?"}
		args = append(args, account, micros(q.From), micros(q.From))
	}
	if !q.Before.IsZero() {
		where = append(where, "seq < coalesce("+firstSeqAt+", 9223372036854775807)", "+created_at < ?")
		args = append(args, account, micros(q.Before), micros(q.Before))
	}
	query := selectLines + " WHERE " + strings.Join(where, " AND ") + " ORDER BY seq"
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
	return query, args
}

// Totals reads a wallet's totals by type and earn mode (migration 00041's
// wallet_totals, kept by a trigger on its lines), ordered by type and earn
// mode with no earn mode ("") first.
func (r reader) Totals(ctx context.Context, account string) ([]ledger.Total, error) {
	if ledger.ClassOf(account) != ledger.ClassWallet {
		return nil, fmt.Errorf("sqlite: totals are kept for wallets only, not %q", account)
	}
	rows, err := r.q.QueryContext(ctx, `SELECT type, earn_mode, amount, count FROM wallet_totals WHERE account_id = ? ORDER BY type, earn_mode`, account)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []ledger.Total
	for rows.Next() {
		var t ledger.Total
		if err := rows.Scan(&t.Type, &t.EarnMode, &t.Amount, &t.Count); err != nil {
			return nil, wrap(err)
		}
		out = append(out, t)
	}
	return out, wrap(rows.Err())
}

func (r reader) Scan(ctx context.Context, fn func(ledger.Line) error) error {
	rows, err := r.q.QueryContext(ctx, selectLines+" ORDER BY account_id, seq")
	if err != nil {
		return wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLine(rows)
		if err != nil {
			return err
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return wrap(rows.Err())
}

func (r reader) Accounts(ctx context.Context) ([]ledger.Account, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT id, balance, seq, head FROM ledger_accounts ORDER BY id`)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []ledger.Account
	for rows.Next() {
		var a ledger.Account
		if err := rows.Scan(&a.ID, &a.Balance, &a.Seq, &a.Head); err != nil {
			return nil, wrap(err)
		}
		out = append(out, a)
	}
	return out, wrap(rows.Err())
}

func (r reader) AllHolds(ctx context.Context) ([]ledger.Hold, error) {
	rows, err := r.q.QueryContext(ctx, selectHolds+" ORDER BY h.created_at, h.id")
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []ledger.Hold
	for rows.Next() {
		h, err := scanHold(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, wrap(rows.Err())
}

// OperationIDs streams the operations' ids (ledger.Reader).
func (r reader) OperationIDs(ctx context.Context, fn func(string) error) error {
	rows, err := r.q.QueryContext(ctx, `SELECT id FROM ledger_operations ORDER BY id`)
	if err != nil {
		return wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return wrap(err)
		}
		if err := fn(id); err != nil {
			return err
		}
	}
	return wrap(rows.Err())
}
