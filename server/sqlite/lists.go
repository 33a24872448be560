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
	at := micros(p.CreatedAt)
	return ` AND (` + prefix + `created_at < ? OR (` + prefix + `created_at = ? AND ` + prefix + `id < ?))`, []any{at, at, p.ID}
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

// ChainPage reads each side through its index ((publisher_app_id,
// created_at), (advertiser_app_id, created_at)); without a role it merges
// the two sides' pages.
func (t *tx) ChainPage(ctx context.Context, q attribution.ChainQuery) ([]attribution.Chain, error) {
	side := func(column string) (string, []any) {
		s, args := selectChains+` WHERE `+column+` = ?`, []any{q.AppID}
		if q.State != "" {
			s, args = s+` AND state = ?`, append(args, string(q.State))
		}
		if q.CampaignID != "" {
			s, args = s+` AND campaign_id = ?`, append(args, q.CampaignID)
		}
		cond, more := after(q.After, "")
		return `SELECT * FROM (` + s + cond + ` ORDER BY created_at DESC, id DESC LIMIT ?)`, append(append(args, more...), q.Limit)
	}
	var query string
	var args []any
	switch q.Role {
	case attribution.RolePublisher:
		query, args = side("publisher_app_id")
	case attribution.RoleAdvertiser:
		query, args = side("advertiser_app_id")
	default:
		pub, pargs := side("publisher_app_id")
		adv, aargs := side("advertiser_app_id")
		query, args = pub+` UNION `+adv+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(append(pargs, aargs...), q.Limit)
	}
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
