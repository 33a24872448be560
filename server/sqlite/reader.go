package sqlite

import (
	"context"
	"database/sql"
	"errors"
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

func (r reader) Lines(ctx context.Context, account string, q ledger.LineQuery) ([]ledger.Line, error) {
	where := []string{"account_id = ?", "seq > ?"}
	args := []any{account, q.AfterSeq}
	if !q.From.IsZero() {
		where = append(where, "created_at >= ?")
		args = append(args, micros(q.From))
	}
	if !q.Before.IsZero() {
		where = append(where, "created_at < ?")
		args = append(args, micros(q.Before))
	}
	query := selectLines + " WHERE " + strings.Join(where, " AND ") + " ORDER BY seq"
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
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

func (r reader) Totals(ctx context.Context, account string) ([]ledger.Total, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT type, coalesce(earn_mode, ''), sum(amount), count(*) FROM ledger_lines
		WHERE account_id = ? GROUP BY type, coalesce(earn_mode, '') ORDER BY type, coalesce(earn_mode, '')`, account)
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
