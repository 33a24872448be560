package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
)

// The market domain's Tx methods (server/market).

func (t *tx) CurrentFloors(ctx context.Context) ([]market.Floor, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT category, platform, floor_cents, version, reason, at FROM category_floors f
WHERE version = (SELECT max(version) FROM category_floors g WHERE g.category = f.category AND g.platform = f.platform)
ORDER BY category, platform`)
	if err != nil {
		return nil, wrap(err)
	}
	return scanFloors(rows)
}

func scanFloors(rows *sql.Rows) ([]market.Floor, error) {
	defer rows.Close()
	var out []market.Floor
	for rows.Next() {
		var f market.Floor
		var at int64
		if err := rows.Scan(&f.Category, &f.Platform, &f.FloorCents, &f.Version, &f.Reason, &at); err != nil {
			return nil, wrap(err)
		}
		f.At = fromMicros(at)
		out = append(out, f)
	}
	return out, wrap(rows.Err())
}

func (t *tx) FloorHistory(ctx context.Context, category string) ([]market.Floor, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT category, platform, floor_cents, version, reason, at FROM category_floors
WHERE category = ? ORDER BY platform, version`, category)
	if err != nil {
		return nil, wrap(err)
	}
	return scanFloors(rows)
}

func (t *tx) AppendFloor(ctx context.Context, f market.Floor) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO category_floors (category, platform, version, floor_cents, reason, at) VALUES (?, ?, ?, ?, ?, ?)`,
		f.Category, string(f.Platform), f.Version, f.FloorCents, f.Reason, micros(f.At))
	return wrap(err)
}

func (t *tx) InsertCampaign(ctx context.Context, c market.Campaign) error {
	cats, err := json.Marshal(c.Categories)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, `INSERT INTO campaigns (id, app_id, categories, daily_budget_cents, max_bid_cents, paused, status, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.AppID, string(cats), c.DailyBudgetCents, c.MaxBidCents, c.Paused, string(c.Status), micros(c.CreatedAt), micros(c.UpdatedAt))
	return wrap(err)
}

const selectCampaigns = `SELECT id, app_id, categories, daily_budget_cents, max_bid_cents, paused, status, created_at, updated_at FROM campaigns`

// scanCampaign reads the columns of selectCampaigns, then into extra the
// columns a query selects after them.
func scanCampaign(rows interface{ Scan(...any) error }, extra ...any) (market.Campaign, error) {
	var c market.Campaign
	var cats string
	var maxBid sql.NullInt64
	var created, updated int64
	if err := rows.Scan(append([]any{&c.ID, &c.AppID, &cats, &c.DailyBudgetCents, &maxBid, &c.Paused, &c.Status, &created, &updated}, extra...)...); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(cats), &c.Categories); err != nil {
		return c, fmt.Errorf("sqlite: campaign %s: categories: %w", c.ID, err)
	}
	if maxBid.Valid {
		c.MaxBidCents = &maxBid.Int64
	}
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

func (t *tx) CampaignByID(ctx context.Context, id string) (market.Campaign, bool, error) {
	c, err := scanCampaign(t.tx.QueryRowContext(ctx, selectCampaigns+` WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return market.Campaign{}, false, nil
	}
	return c, err == nil, wrap(err)
}

func (t *tx) SetCampaignStatus(ctx context.Context, id string, paused bool, status xpromo.CampaignStatus, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE campaigns SET paused = ?, status = ?, updated_at = ? WHERE id = ?`, paused, string(status), micros(at), id)
	return wrap(err)
}

// LockCampaign is CampaignByID: SQLite's single writer (BEGIN IMMEDIATE)
// already serializes the transaction with every other change.
func (t *tx) LockCampaign(ctx context.Context, id string) (market.Campaign, bool, error) {
	return t.CampaignByID(ctx, id)
}

func (t *tx) SetCampaignSettings(ctx context.Context, c market.Campaign) error {
	cats, err := json.Marshal(c.Categories)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, `UPDATE campaigns SET categories = ?, daily_budget_cents = ?, max_bid_cents = ?, status = ?, updated_at = ? WHERE id = ?`,
		string(cats), c.DailyBudgetCents, c.MaxBidCents, string(c.Status), micros(c.UpdatedAt), c.ID)
	return wrap(err)
}

// CampaignPage reads a page newest first through the index campaigns_app
// (app_id, created_at), with each campaign's row of campaign_spend for the
// day (none: 0).
func (t *tx) CampaignPage(ctx context.Context, q market.CampaignQuery) ([]market.Campaign, error) {
	query := `SELECT c.id, c.app_id, c.categories, c.daily_budget_cents, c.max_bid_cents, c.paused, c.status, c.created_at, c.updated_at, coalesce(s.spent_cents, 0)
FROM campaigns c LEFT JOIN campaign_spend s ON s.campaign_id = c.id AND s.day = ?
WHERE c.app_id = ?`
	args := []any{micros(q.Day), q.AppID}
	if q.Status != "" {
		query += ` AND c.status = ?`
		args = append(args, string(q.Status))
	}
	if q.After != nil {
		query += ` AND (c.created_at < ? OR (c.created_at = ? AND c.id < ?))`
		at := micros(q.After.CreatedAt)
		args = append(args, at, at, q.After.ID)
	}
	query += ` ORDER BY c.created_at DESC, c.id DESC LIMIT ?`
	args = append(args, q.Limit)
	rows, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []market.Campaign
	for rows.Next() {
		var spent int64
		c, err := scanCampaign(rows, &spent)
		if err != nil {
			return nil, wrap(err)
		}
		c.SpentTodayCents = spent
		out = append(out, c)
	}
	return out, wrap(rows.Err())
}

func (t *tx) AppCampaigns(ctx context.Context, appID string) ([]market.Campaign, error) {
	rows, err := t.tx.QueryContext(ctx, selectCampaigns+` WHERE app_id = ? ORDER BY created_at, id`, appID)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []market.Campaign
	for rows.Next() {
		c, err := scanCampaign(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, c)
	}
	return out, wrap(rows.Err())
}

func (t *tx) AppPlatformAndStatus(ctx context.Context, appID string) (xpromo.Platform, xpromo.AppStatus, bool, error) {
	var platform, status string
	err := t.tx.QueryRowContext(ctx, `SELECT platform, status FROM apps WHERE id = ?`, appID).Scan(&platform, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, wrap(err)
	}
	return xpromo.Platform(platform), xpromo.AppStatus(status), true, nil
}

func (t *tx) AdvertiserBalance(ctx context.Context, appID string) (int64, error) {
	var balance int64
	err := t.tx.QueryRowContext(ctx, `SELECT balance FROM ledger_accounts WHERE id = ?`, ledger.Wallet(appID)).Scan(&balance)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return balance, wrap(err)
}

// holdStats aggregates holds with their resolution (if any). A hold opened
// for an install carries its chain's id; the sweep writes the chain's
// reason in the transaction that releases the hold, so a release whose chain
// is refunded publisher_suspended is told apart through the join the floors
// already need.
// The floor of a hold is the one its chain's offer was made under: the
// highest version of the (category, platform) floor dated at or before the
// offer, else (an offer older than the history) the first version.
const holdStats = `SELECT count(*), count(r.hold_id),
  count(*) FILTER (WHERE r.resolution = 'charge'),
  coalesce(sum(h.amount) FILTER (WHERE r.resolution = 'charge'), 0),
  count(` + chainFloor + `) FILTER (WHERE r.resolution = 'charge'),
  coalesce(sum(` + chainFloor + `) FILTER (WHERE r.resolution = 'charge'), 0),
  count(*) FILTER (WHERE r.resolution = 'release' AND c.reason = 'publisher_suspended')
FROM escrow_holds h LEFT JOIN escrow_resolutions r ON r.hold_id = h.id
LEFT JOIN chains c ON c.id = h.chain_id
WHERE h.created_at BETWEEN ? AND ?`

const chainFloor = `(SELECT cf.floor_cents FROM category_floors cf WHERE cf.category = c.category AND cf.platform = c.platform
  ORDER BY CASE WHEN cf.at <= c.offered_at THEN cf.version ELSE -cf.version END DESC LIMIT 1)`

func (t *tx) holdStats(ctx context.Context, query string, args ...any) (market.HoldStats, error) {
	var s market.HoldStats
	err := t.tx.QueryRowContext(ctx, query, args...).Scan(&s.Opened, &s.Resolved, &s.Charged, &s.ChargedAmount, &s.FlooredCharged, &s.ChargedFloors, &s.PublisherSuspended)
	return s, wrap(err)
}

func (t *tx) AdvertiserHoldStats(ctx context.Context, appID string, from, to time.Time) (market.HoldStats, error) {
	return t.holdStats(ctx, holdStats+` AND h.advertiser_app_id = ?`, micros(from), micros(to), appID)
}

func (t *tx) NetworkHoldStats(ctx context.Context, from, to time.Time) (market.HoldStats, error) {
	return t.holdStats(ctx, holdStats, micros(from), micros(to))
}

func (t *tx) DeliveryCampaigns(ctx context.Context) ([]market.DeliveryCampaign, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT c.id, c.app_id, c.categories, c.daily_budget_cents, c.max_bid_cents, c.paused, c.status, c.created_at, c.updated_at,
  a.platform, a.status, coalesce(w.balance, 0)
FROM campaigns c JOIN apps a ON a.id = c.app_id LEFT JOIN ledger_accounts w ON w.id = ? || c.app_id
WHERE NOT c.paused ORDER BY c.id`, ledger.Wallet(""))
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []market.DeliveryCampaign
	for rows.Next() {
		var d market.DeliveryCampaign
		var cats string
		var maxBid sql.NullInt64
		var created, updated int64
		if err := rows.Scan(&d.ID, &d.AppID, &cats, &d.DailyBudgetCents, &maxBid, &d.Paused, &d.Status, &created, &updated,
			&d.Platform, &d.AppStatus, &d.Balance); err != nil {
			return nil, wrap(err)
		}
		if err := json.Unmarshal([]byte(cats), &d.Categories); err != nil {
			return nil, fmt.Errorf("sqlite: campaign %s: categories: %w", d.ID, err)
		}
		if maxBid.Valid {
			d.MaxBidCents = &maxBid.Int64
		}
		d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
		out = append(out, d)
	}
	return out, wrap(rows.Err())
}
