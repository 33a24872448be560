package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/payments"
)

// The lists the dashboard reads (apps.ListTx, attribution.ListTx,
// payments.ListTx) on SQLite. Each page is a keyset read: the rows after a
// cursor's (created_at, id) in the order of an index, never an OFFSET.

// after is the keyset condition of a newest-first list: the rows strictly
// before the position p in (created_at DESC, id DESC) order.
func after(p *cursor.Position, prefix string) (string, []any) {
	if p == nil {
		return "", nil
	}
	// A row value, which SQLite turns into a range of the index's
	// (created_at, id) (the OR of the two comparisons it reads as a filter,
	// so a deep page walked every row before it).
	return ` AND (` + prefix + `created_at, ` + prefix + `id) < (?, ?)`, []any{micros(p.CreatedAt), p.ID}
}

// AppPage reads oldest first: by the index apps_status_created with a
// status, by apps_created without (00030_lists.sql).
func (t *tx) AppPage(ctx context.Context, q apps.AppQuery) ([]apps.App, error) {
	query, args := `SELECT `+appColumns+` FROM apps WHERE true`, []any{}
	if q.Status != "" {
		query, args = query+` AND status = ?`, append(args, string(q.Status))
	}
	if q.After != nil {
		at := micros(q.After.CreatedAt)
		query, args = query+` AND (created_at > ? OR (created_at = ? AND id > ?))`, append(args, at, at, q.After.ID)
	}
	rows, err := t.tx.QueryContext(ctx, query+` ORDER BY created_at, id LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []apps.App
	for rows.Next() {
		a, err := scanApp(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, a)
	}
	return out, wrap(rows.Err())
}

func (t *tx) AppAPIKeys(ctx context.Context, appID string, limit int) ([]apps.APIKey, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT prefix, created_at, expires_at FROM api_keys WHERE app_id = ?
ORDER BY created_at DESC, (expires_at IS NULL) DESC, expires_at DESC, prefix DESC LIMIT ?`, appID, limit)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []apps.APIKey
	for rows.Next() {
		k := apps.APIKey{AppID: appID}
		var created int64
		var expires sql.NullInt64
		if err := rows.Scan(&k.Prefix, &created, &expires); err != nil {
			return nil, wrap(err)
		}
		k.CreatedAt, k.ExpiresAt = fromMicros(created), fromNullMicros(expires)
		out = append(out, k)
	}
	return out, wrap(rows.Err())
}

// AuditPage reads in the order entries were written (seq), newest first;
// a cursor's id names the entry the previous page ended on.
func (t *tx) AuditPage(ctx context.Context, p *cursor.Position, limit int) ([]apps.AuditEntry, error) {
	query, args := `SELECT id, actor, action, subject, detail, at FROM admin_audit`, []any{}
	if p != nil {
		query, args = query+` WHERE seq < coalesce((SELECT seq FROM admin_audit WHERE id = ?), 0)`, append(args, p.ID)
	}
	rows, err := t.tx.QueryContext(ctx, query+` ORDER BY seq DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []apps.AuditEntry
	for rows.Next() {
		var e apps.AuditEntry
		var detail string
		var at int64
		if err := rows.Scan(&e.ID, &e.Actor, &e.Action, &e.Subject, &detail, &at); err != nil {
			return nil, wrap(err)
		}
		e.Detail, e.At = json.RawMessage(detail), fromMicros(at)
		out = append(out, e)
	}
	return out, wrap(rows.Err())
}

// ChainPage reads a page of q's chains (chainsQuery).
func (t *tx) ChainPage(ctx context.Context, q attribution.ChainQuery) ([]attribution.Chain, error) {
	query, args := chainsQuery(q)
	rows, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []attribution.Chain
	for rows.Next() {
		c, err := scanChain(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, c)
	}
	return out, wrap(rows.Err())
}

// chainsQuery is the statement of a chain page. Each side is a keyset read
// of the index that leads with the filters given, so that a page reads
// about as many chains as it returns whatever the app's history holds
// (00044_chain_list_indexes.sql, and PostgreSQL's ChainsQuery): the side's
// (app, created_at) without a filter, (app, state, created_at, id) with a
// state, (campaign_id, created_at, id) with a campaign and
// (campaign_id, state, created_at, id) with both. A campaign of another
// app reads nothing on the advertiser side: the ownership test is a
// constant, evaluated once before the scan. Without a role it merges the
// two sides' pages.
func chainsQuery(q attribution.ChainQuery) (string, []any) {
	side := func(column string) (string, []any) {
		var s string
		var args []any
		if q.CampaignID != "" && column == "advertiser_app_id" {
			// A chain's advertiser is its campaign's app, so the campaign's
			// owner stands for the side's column (PostgreSQL's ChainsQuery).
			s, args = selectChains+` WHERE campaign_id = ? AND EXISTS (SELECT 1 FROM campaigns WHERE id = ? AND app_id = ?)`, []any{q.CampaignID, q.CampaignID, q.AppID}
		} else {
			s, args = selectChains+` WHERE `+column+` = ?`, []any{q.AppID}
			if q.CampaignID != "" {
				s, args = s+` AND campaign_id = ?`, append(args, q.CampaignID)
			}
		}
		if q.State != "" {
			s, args = s+` AND state = ?`, append(args, string(q.State))
		}
		cond, more := after(q.After, "")
		return `SELECT * FROM (` + s + cond + ` ORDER BY created_at DESC, id DESC LIMIT ?)`, append(append(args, more...), q.Limit)
	}
	switch q.Role {
	case attribution.RolePublisher:
		return side("publisher_app_id")
	case attribution.RoleAdvertiser:
		return side("advertiser_app_id")
	}
	pub, pargs := side("publisher_app_id")
	adv, aargs := side("advertiser_app_id")
	return pub + ` UNION ` + adv + ` ORDER BY created_at DESC, id DESC LIMIT ?`, append(append(pargs, aargs...), q.Limit)
}

func (t *tx) LedgerBalance(ctx context.Context, account string) (int64, error) {
	a, err := reader{t.tx}.Account(ctx, account)
	return a.Balance, err
}

func (t *tx) PayoutPage(ctx context.Context, appID string, p *cursor.Position, limit int) ([]payments.Payout, error) {
	cond, args := after(p, "")
	rows, err := t.tx.QueryContext(ctx, `SELECT `+payoutColumns+` FROM payouts WHERE app_id = ?`+cond+`
ORDER BY created_at DESC, id DESC LIMIT ?`, append(append([]any{appID}, args...), limit)...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []payments.Payout
	for rows.Next() {
		po, err := scanPayout(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, po)
	}
	return out, wrap(rows.Err())
}
