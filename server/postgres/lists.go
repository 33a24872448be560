package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/payments"
)

// The lists the dashboard reads (apps.ListTx, attribution.ListTx,
// payments.ListTx) on PostgreSQL. Each page is a keyset read: the rows
// after a cursor's (created_at, id) in the order of an index, never an
// OFFSET.

// args numbers the parameters of a query as they are added.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// before is the keyset condition of a newest-first list: the rows strictly
// before p in (created_at DESC, id DESC) order.
func (a *args) before(p *cursor.Position) string {
	if p == nil {
		return ""
	}
	return ` AND (created_at, id) < (` + a.add(p.CreatedAt) + `, ` + a.add(p.ID) + `)`
}

// AppPage reads oldest first: by the index apps_status_created with a
// status, by apps_created without (00030_lists.sql).
func (t *tx) AppPage(ctx context.Context, q apps.AppQuery) ([]apps.App, error) {
	var a args
	query := `SELECT ` + appColumns + ` FROM apps WHERE true`
	if q.Status != "" {
		query += ` AND status = ` + a.add(string(q.Status))
	}
	if q.After != nil {
		query += ` AND (created_at, id) > (` + a.add(q.After.CreatedAt) + `, ` + a.add(q.After.ID) + `)`
	}
	query += ` ORDER BY created_at, id LIMIT ` + a.add(q.Limit)
	var out []apps.App
	err := t.query(ctx, query, a, func(rows pgx.Rows) error {
		app, err := scanApp(rows)
		out = append(out, app)
		return err
	})
	return out, wrap(err, "listing apps")
}

func (t *tx) AppAPIKeys(ctx context.Context, appID string, limit int) ([]apps.APIKey, error) {
	var out []apps.APIKey
	err := t.query(ctx, `SELECT prefix, created_at, expires_at FROM api_keys WHERE app_id = $1
ORDER BY created_at DESC, (expires_at IS NULL) DESC, expires_at DESC, prefix DESC LIMIT $2`, []any{appID, limit}, func(rows pgx.Rows) error {
		k := apps.APIKey{AppID: appID}
		if err := rows.Scan(&k.Prefix, &k.CreatedAt, &k.ExpiresAt); err != nil {
			return err
		}
		k.CreatedAt, k.ExpiresAt = k.CreatedAt.UTC(), utcPtr(k.ExpiresAt)
		out = append(out, k)
		return nil
	})
	return out, wrap(err, "listing API keys")
}

// AuditPage reads in the order entries were written (seq), newest first;
// a cursor's id names the entry the previous page ended on.
func (t *tx) AuditPage(ctx context.Context, p *cursor.Position, limit int) ([]apps.AuditEntry, error) {
	var a args
	query := `SELECT id, actor, action, subject, detail, at FROM admin_audit`
	if p != nil {
		query += ` WHERE seq < coalesce((SELECT seq FROM admin_audit WHERE id = ` + a.add(p.ID) + `), 0)`
	}
	query += ` ORDER BY seq DESC LIMIT ` + a.add(limit)
	var out []apps.AuditEntry
	err := t.query(ctx, query, a, func(rows pgx.Rows) error {
		var e apps.AuditEntry
		var detail []byte
		if err := rows.Scan(&e.ID, &e.Actor, &e.Action, &e.Subject, &detail, &e.At); err != nil {
			return err
		}
		e.Detail, e.At = json.RawMessage(detail), e.At.UTC()
		out = append(out, e)
		return nil
	})
	return out, wrap(err, "reading the audit log")
}

// ChainPage reads a page of q's chains (ChainsQuery).
func (t *tx) ChainPage(ctx context.Context, q attribution.ChainQuery) ([]attribution.Chain, error) {
	query, a := ChainsQuery(q)
	var out []attribution.Chain
	err := t.query(ctx, query, a, func(rows pgx.Rows) error {
		c, err := scanChain(rows)
		out = append(out, c)
		return err
	})
	return out, wrap(err, "listing chains")
}

// ChainsQuery is the statement of a chain page (exported for the plan
// tests). Each side is a keyset read of the index that leads with the
// filters given, so that a page reads about as many chains as it returns
// whatever the app's history holds (00044_chain_list_indexes.sql): the
// side's (app, created_at) without a filter, (app, state, created_at, id)
// with a state, (campaign_id, created_at, id) with a campaign and
// (campaign_id, state, created_at, id) with both. A campaign of another
// app reads nothing on the advertiser side: the ownership test is a
// one-time filter before the scan. Without a role it merges the two sides'
// pages. (attribution.ListChains reads a campaign's advertiser side only.)
func ChainsQuery(q attribution.ChainQuery) (string, []any) {
	var a args
	side := func(column string) string {
		var s string
		if q.CampaignID != "" && column == "advertiser_app_id" {
			// A chain's advertiser is its campaign's app, so the campaign's
			// owner stands for the side's column: with both, the planner
			// (which takes them for independent) would AND the campaign's
			// index with the whole of the advertiser's.
			campaign := a.add(q.CampaignID)
			s = `(` + selectChains + ` WHERE campaign_id = ` + campaign +
				` AND EXISTS (SELECT 1 FROM campaigns WHERE id = ` + campaign + ` AND app_id = ` + a.add(q.AppID) + `)`
		} else {
			s = `(` + selectChains + ` WHERE ` + column + ` = ` + a.add(q.AppID)
			if q.CampaignID != "" {
				s += ` AND campaign_id = ` + a.add(q.CampaignID)
			}
		}
		if q.State != "" {
			s += ` AND state = ` + a.add(string(q.State))
		}
		return s + a.before(q.After) + ` ORDER BY created_at DESC, id DESC LIMIT ` + a.add(q.Limit) + `)`
	}
	var query string
	switch q.Role {
	case attribution.RolePublisher:
		query = side("publisher_app_id")
	case attribution.RoleAdvertiser:
		query = side("advertiser_app_id")
	default:
		query = side("publisher_app_id") + ` UNION ` + side("advertiser_app_id") + ` ORDER BY created_at DESC, id DESC LIMIT ` + a.add(q.Limit)
	}
	return query, a
}

func (t *tx) LedgerBalance(ctx context.Context, account string) (int64, error) {
	var b int64
	err := t.queryRow(ctx, `SELECT coalesce((SELECT balance FROM ledger_accounts WHERE id = $1), 0)`, []any{account}, &b)
	return b, wrap(err, "reading a balance")
}

func (t *tx) PayoutPage(ctx context.Context, appID string, p *cursor.Position, limit int) ([]payments.Payout, error) {
	a := args{appID}
	query := `SELECT ` + payoutColumns + ` FROM payouts WHERE app_id = $1` + a.before(p) + ` ORDER BY created_at DESC, id DESC LIMIT ` + a.add(limit)
	var out []payments.Payout
	err := t.query(ctx, query, a, func(rows pgx.Rows) error {
		po, err := scanPayout(rows)
		out = append(out, po)
		return err
	})
	return out, wrap(err, "listing payouts")
}
