package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
)

// The market domain's Tx methods (server/market).

func init() {
	// Two concurrent changes of one (category, platform) floor write the same
	// version; the loser runs again and sees the winner's floor.
	conflictConstraints["category_floors_pkey"] = true
}

func (t *tx) CurrentFloors(ctx context.Context) ([]market.Floor, error) {
	out, err := t.floors(ctx, `SELECT DISTINCT ON (category, platform) category, platform, floor_cents, version, reason, at
FROM category_floors ORDER BY category, platform, version DESC`)
	return out, wrap(err, "reading floors")
}

func (t *tx) FloorHistory(ctx context.Context, category string) ([]market.Floor, error) {
	out, err := t.floors(ctx, `SELECT category, platform, floor_cents, version, reason, at
FROM category_floors WHERE category = $1 ORDER BY platform, version`, category)
	return out, wrap(err, "reading floor history")
}

func (t *tx) floors(ctx context.Context, query string, args ...any) ([]market.Floor, error) {
	var out []market.Floor
	err := t.query(ctx, query, args, func(rows pgx.Rows) error {
		var f market.Floor
		var platform string
		if err := rows.Scan(&f.Category, &platform, &f.FloorCents, &f.Version, &f.Reason, &f.At); err != nil {
			return err
		}
		f.Platform, f.At = xpromo.Platform(platform), f.At.UTC()
		out = append(out, f)
		return nil
	})
	return out, err
}

func (t *tx) AppendFloor(ctx context.Context, f market.Floor) error {
	_, err := t.exec(ctx, `INSERT INTO category_floors (category, platform, version, floor_cents, reason, at) VALUES ($1, $2, $3, $4, $5, $6)`,
		f.Category, string(f.Platform), f.Version, f.FloorCents, f.Reason, f.At)
	return wrap(err, "appending a floor")
}

func (t *tx) InsertCampaign(ctx context.Context, c market.Campaign) error {
	cats, err := json.Marshal(c.Categories)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO campaigns (id, app_id, categories, daily_budget_cents, max_bid_cents, paused, status, created_at, updated_at)
VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8, $9)`,
		c.ID, c.AppID, string(cats), c.DailyBudgetCents, c.MaxBidCents, c.Paused, string(c.Status), c.CreatedAt, c.UpdatedAt)
	return wrap(err, "inserting a campaign")
}

const selectCampaigns = `SELECT id, app_id, categories::text, daily_budget_cents, max_bid_cents, paused, status, created_at, updated_at FROM campaigns`

// scanCampaign reads the columns of selectCampaigns, then into extra the
// columns a query selects after them.
func scanCampaign(row pgx.Row, extra ...any) (market.Campaign, error) {
	var c market.Campaign
	var cats, status string
	if err := row.Scan(append([]any{&c.ID, &c.AppID, &cats, &c.DailyBudgetCents, &c.MaxBidCents, &c.Paused, &status, &c.CreatedAt, &c.UpdatedAt}, extra...)...); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(cats), &c.Categories); err != nil {
		return c, fmt.Errorf("postgres: campaign %s: categories: %w", c.ID, err)
	}
	c.Status, c.CreatedAt, c.UpdatedAt = xpromo.CampaignStatus(status), c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

func (t *tx) CampaignByID(ctx context.Context, id string) (market.Campaign, bool, error) {
	var c market.Campaign
	found := false
	err := t.query(ctx, selectCampaigns+` WHERE id = $1`, []any{id}, func(rows pgx.Rows) error {
		var err error
		c, err = scanCampaign(rows)
		found = err == nil
		return err
	})
	return c, found, wrap(err, "reading a campaign")
}

func (t *tx) SetCampaignStatus(ctx context.Context, id string, paused bool, status xpromo.CampaignStatus, at time.Time) error {
	_, err := t.exec(ctx, `UPDATE campaigns SET paused = $2, status = $3, updated_at = $4 WHERE id = $1`, id, paused, string(status), at)
	return wrap(err, "updating a campaign")
}

// LockCampaign reads the campaign FOR UPDATE: an install claim of the
// campaign (attribution's CampaignForUpdate) waits for the change, or the
// change for the claim.
func (t *tx) LockCampaign(ctx context.Context, id string) (market.Campaign, bool, error) {
	var c market.Campaign
	found := false
	err := t.query(ctx, selectCampaigns+` WHERE id = $1 FOR UPDATE`, []any{id}, func(rows pgx.Rows) error {
		var err error
		c, err = scanCampaign(rows)
		found = err == nil
		return err
	})
	return c, found, wrap(err, "locking a campaign")
}

func (t *tx) SetCampaignSettings(ctx context.Context, c market.Campaign) error {
	cats, err := json.Marshal(c.Categories)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `UPDATE campaigns SET categories = $2::jsonb, daily_budget_cents = $3, max_bid_cents = $4, status = $5, updated_at = $6 WHERE id = $1`,
		c.ID, string(cats), c.DailyBudgetCents, c.MaxBidCents, string(c.Status), c.UpdatedAt)
	return wrap(err, "updating a campaign")
}

// CampaignPage reads a page newest first through the index campaigns_app
// (app_id, created_at), with each campaign's row of campaign_spend for the
// day (none: 0).
func (t *tx) CampaignPage(ctx context.Context, q market.CampaignQuery) ([]market.Campaign, error) {
	query := `SELECT c.id, c.app_id, c.categories::text, c.daily_budget_cents, c.max_bid_cents, c.paused, c.status, c.created_at, c.updated_at, coalesce(s.spent_cents, 0)::bigint
FROM campaigns c LEFT JOIN campaign_spend s ON s.campaign_id = c.id AND s.day = ($1::timestamptz AT TIME ZONE 'UTC')::date
WHERE c.app_id = $2`
	args := []any{q.Day, q.AppID}
	if q.Status != "" {
		args = append(args, string(q.Status))
		query += fmt.Sprintf(` AND c.status = $%d`, len(args))
	}
	if q.After != nil {
		args = append(args, q.After.CreatedAt, q.After.ID)
		query += fmt.Sprintf(` AND (c.created_at, c.id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	args = append(args, q.Limit)
	query += fmt.Sprintf(` ORDER BY c.created_at DESC, c.id DESC LIMIT $%d`, len(args))
	var out []market.Campaign
	err := t.query(ctx, query, args, func(rows pgx.Rows) error {
		var spent int64
		c, err := scanCampaign(rows, &spent)
		c.SpentTodayCents = spent
		out = append(out, c)
		return err
	})
	return out, wrap(err, "reading a page of campaigns")
}

func (t *tx) AppCampaigns(ctx context.Context, appID string) ([]market.Campaign, error) {
	var out []market.Campaign
	err := t.query(ctx, selectCampaigns+` WHERE app_id = $1 ORDER BY created_at, id`, []any{appID}, func(rows pgx.Rows) error {
		c, err := scanCampaign(rows)
		out = append(out, c)
		return err
	})
	return out, wrap(err, "reading campaigns")
}

func (t *tx) AppPlatformAndStatus(ctx context.Context, appID string) (xpromo.Platform, xpromo.AppStatus, bool, error) {
	var platform, status string
	err := t.queryRow(ctx, `SELECT platform, status FROM apps WHERE id = $1`, []any{appID}, &platform, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, wrap(err, "reading an app")
	}
	return xpromo.Platform(platform), xpromo.AppStatus(status), true, nil
}

func (t *tx) AdvertiserBalance(ctx context.Context, appID string) (int64, error) {
	var balance int64
	err := t.queryRow(ctx, `SELECT balance FROM ledger_accounts WHERE id = $1`, []any{ledger.Wallet(appID)}, &balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return balance, wrap(err, "reading a wallet balance")
}

// holdStats aggregates holds with their resolution (if any). A hold opened
// for an install carries its chain's id; the sweep writes the chain's
// reason in the transaction that releases the hold, so a release whose chain
// is refunded publisher_suspended is told apart through the join the floors
// already need.
// The floor of a hold is the one its chain's offer was made under: the
// highest version of the (category, platform) floor dated at or before the
// offer, else (an offer older than the history) the first version.
// The resolution and the chain are looked up per hold (LATERAL with LIMIT 1,
// which the planner cannot flatten into a join; each is unique by its
// primary key, so the figures are the same): the holds of the window are a
// day's at most (package rollup), and as plain joins PostgreSQL planned a
// hash join over every resolution of the history, or a parallel scan of
// every hold, on the full store (BENCHMARKS.md, "A year of history",
// wip/reads).
const holdStats = `SELECT count(*), count(r.resolution),
  count(*) FILTER (WHERE r.resolution = 'charge'),
  coalesce(sum(h.amount) FILTER (WHERE r.resolution = 'charge'), 0)::bigint,
  count(f.floor_cents) FILTER (WHERE r.resolution = 'charge'),
  coalesce(sum(f.floor_cents) FILTER (WHERE r.resolution = 'charge'), 0)::bigint,
  count(*) FILTER (WHERE r.resolution = 'release' AND c.reason = 'publisher_suspended')
FROM escrow_holds h
LEFT JOIN LATERAL (SELECT x.resolution FROM escrow_resolutions x WHERE x.hold_id = h.id LIMIT 1) r ON true
LEFT JOIN LATERAL (SELECT y.reason, y.category, y.platform, y.offered_at FROM chains y WHERE y.id = h.chain_id LIMIT 1) c ON true
LEFT JOIN LATERAL (SELECT cf.floor_cents FROM category_floors cf WHERE cf.category = c.category AND cf.platform = c.platform
  ORDER BY CASE WHEN cf.at <= c.offered_at THEN cf.version ELSE -cf.version END DESC LIMIT 1) f ON true
WHERE h.created_at BETWEEN $1 AND $2`

func (t *tx) holdStats(ctx context.Context, query string, args ...any) (market.HoldStats, error) {
	var s market.HoldStats
	err := t.queryRow(ctx, query, args, &s.Opened, &s.Resolved, &s.Charged, &s.ChargedAmount, &s.FlooredCharged, &s.ChargedFloors, &s.PublisherSuspended)
	return s, wrap(err, "aggregating holds")
}

func (t *tx) AdvertiserHoldStats(ctx context.Context, appID string, from, to time.Time) (market.HoldStats, error) {
	return t.holdStats(ctx, holdStats+` AND h.advertiser_app_id = $3`, from, to, appID)
}

func (t *tx) NetworkHoldStats(ctx context.Context, from, to time.Time) (market.HoldStats, error) {
	return t.holdStats(ctx, holdStats, from, to)
}

func (t *tx) DeliveryCampaigns(ctx context.Context) ([]market.DeliveryCampaign, error) {
	var out []market.DeliveryCampaign
	err := t.query(ctx, `SELECT c.id, c.app_id, c.categories::text, c.daily_budget_cents, c.max_bid_cents, c.paused, c.status, c.created_at, c.updated_at,
  a.platform, a.status, coalesce(w.balance, 0)
FROM campaigns c JOIN apps a ON a.id = c.app_id LEFT JOIN ledger_accounts w ON w.id = $1 || c.app_id
WHERE NOT c.paused ORDER BY c.id`, []any{ledger.Wallet("")}, func(rows pgx.Rows) error {
		var d market.DeliveryCampaign
		var cats, status, platform, appStatus string
		if err := rows.Scan(&d.ID, &d.AppID, &cats, &d.DailyBudgetCents, &d.MaxBidCents, &d.Paused, &status, &d.CreatedAt, &d.UpdatedAt,
			&platform, &appStatus, &d.Balance); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(cats), &d.Categories); err != nil {
			return fmt.Errorf("postgres: campaign %s: categories: %w", d.ID, err)
		}
		d.Status, d.Platform, d.AppStatus = xpromo.CampaignStatus(status), xpromo.Platform(platform), xpromo.AppStatus(appStatus)
		d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
		out = append(out, d)
		return nil
	})
	return out, wrap(err, "reading campaigns for delivery")
}
