package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/webhooks"
)

// attribution.Tx on SQLite. The write transaction holds the database's only
// write lock from BEGIN IMMEDIATE, so "FOR UPDATE" needs no row locks and the
// sweep's batch is a plain select.

var _ attribution.Tx = (*tx)(nil)

// zmicros stores a time, 0 for the zero time ("not yet").
func zmicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromZMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return fromMicros(us)
}

func (t *tx) InsertSDKKey(ctx context.Context, k attribution.SDKKey) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO sdk_keys (kid, app_id, public_key, created_at, revoked_at) VALUES (?, ?, ?, ?, ?)`,
		k.ID, k.AppID, []byte(k.PublicKey), micros(k.CreatedAt), nullZMicros(k.RevokedAt))
	return wrap(err)
}

func nullZMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}

const selectSDKKeys = `SELECT kid, app_id, public_key, created_at, revoked_at FROM sdk_keys`

func scanSDKKey(r scanner) (attribution.SDKKey, error) {
	var k attribution.SDKKey
	var pub []byte
	var created int64
	var revoked sql.NullInt64
	if err := r.Scan(&k.ID, &k.AppID, &pub, &created, &revoked); err != nil {
		return k, err
	}
	k.PublicKey, k.CreatedAt = pub, fromMicros(created)
	if revoked.Valid {
		k.RevokedAt = fromMicros(revoked.Int64)
	}
	return k, nil
}

func (t *tx) SDKKey(ctx context.Context, kid string) (attribution.SDKKey, bool, error) {
	k, err := scanSDKKey(t.tx.QueryRowContext(ctx, selectSDKKeys+` WHERE kid = ?`, kid))
	if errors.Is(err, sql.ErrNoRows) {
		return attribution.SDKKey{}, false, nil
	}
	return k, err == nil, wrap(err)
}

func (t *tx) AppSDKKeys(ctx context.Context, appID string) ([]attribution.SDKKey, error) {
	rows, err := t.tx.QueryContext(ctx, selectSDKKeys+` WHERE app_id = ? ORDER BY created_at, kid`, appID)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []attribution.SDKKey
	for rows.Next() {
		k, err := scanSDKKey(rows)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, k)
	}
	return out, wrap(rows.Err())
}

func (t *tx) RevokeSDKKey(ctx context.Context, kid string, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE sdk_keys SET revoked_at = ? WHERE kid = ? AND revoked_at IS NULL`, micros(at), kid)
	return wrap(err)
}

const chainColumns = `id, nonce, claimed_nonce, state, reason, campaign_id, publisher_app_id, advertiser_app_id, category, platform,
price_cents, offered_at, clicked_at, expires_at, click_token, token_hash, publisher_kid, countersignature, advertiser_kid,
device_id, claimed_at, click_ip, install_ip, install_asn, installed_at, activated_at, resolved_at, heartbeat_seq,
last_heartbeat_at, created_at, updated_at`

const selectChains = `SELECT ` + chainColumns + ` FROM chains`

// chainColumnsOfC is chainColumns qualified by the alias c, for joins.
var chainColumnsOfC = "c." + strings.NewReplacer(", ", ", c.", ",\n", ",\nc.").Replace(chainColumns)

func scanChain(r scanner, extra ...any) (attribution.Chain, error) {
	var c attribution.Chain
	var nonce, claimed sql.NullString
	var state, platform string
	var offered, clicked, expires, claimedAt, installed, activated, resolved, lastHB, created, updated int64
	dest := []any{&c.ID, &nonce, &claimed, &state, &c.Reason, &c.CampaignID, &c.PublisherAppID, &c.AdvertiserAppID, &c.Category, &platform,
		&c.PriceCents, &offered, &clicked, &expires, &c.ClickToken, &c.TokenHash, &c.PublisherKID, &c.Countersignature, &c.AdvertiserKID,
		&c.DeviceID, &claimedAt, &c.ClickIP, &c.InstallIP, &c.InstallASN, &installed, &activated, &resolved, &c.HeartbeatSeq,
		&lastHB, &created, &updated}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return c, err
	}
	c.Nonce, c.ClaimedNonce = nonce.String, claimed.String
	c.State, c.Platform = attribution.State(state), xpromo.Platform(platform)
	c.OfferedAt, c.ClickedAt, c.ExpiresAt = fromZMicros(offered), fromZMicros(clicked), fromZMicros(expires)
	c.ClaimedAt, c.InstalledAt, c.ActivatedAt = fromZMicros(claimedAt), fromZMicros(installed), fromZMicros(activated)
	c.ResolvedAt, c.LastHeartbeatAt = fromZMicros(resolved), fromZMicros(lastHB)
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

// InsertChain inserts c; with a nonce already stored it writes nothing and
// reports false (ON CONFLICT DO NOTHING: the single-use insert).
func (t *tx) InsertChain(ctx context.Context, c attribution.Chain) (bool, error) {
	res, err := t.tx.ExecContext(ctx, insertChain+` ON CONFLICT (nonce) DO NOTHING`, chainArgs(c)...)
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap(err)
}

// InsertClaimedChain inserts a claim's fresh chain. A chain of the nonce
// already stored is a unique violation, which wrap makes ledger.ErrConflict
// (the single writer makes it a bug here, not a race).
func (t *tx) InsertClaimedChain(ctx context.Context, c attribution.Chain) error {
	_, err := t.tx.ExecContext(ctx, insertChain, chainArgs(c)...)
	return wrap(err)
}

const insertChain = `INSERT INTO chains (` + chainColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func chainArgs(c attribution.Chain) []any {
	return []any{c.ID, null(c.Nonce), null(c.ClaimedNonce), string(c.State), c.Reason, c.CampaignID, c.PublisherAppID, c.AdvertiserAppID, c.Category, string(c.Platform),
		c.PriceCents, zmicros(c.OfferedAt), zmicros(c.ClickedAt), zmicros(c.ExpiresAt), c.ClickToken, c.TokenHash, c.PublisherKID, c.Countersignature, c.AdvertiserKID,
		c.DeviceID, zmicros(c.ClaimedAt), c.ClickIP, c.InstallIP, c.InstallASN, zmicros(c.InstalledAt), zmicros(c.ActivatedAt), zmicros(c.ResolvedAt), c.HeartbeatSeq,
		zmicros(c.LastHeartbeatAt), micros(c.CreatedAt), micros(c.UpdatedAt)}
}

func (t *tx) chain(ctx context.Context, where string, args ...any) (attribution.Chain, bool, error) {
	c, err := scanChain(t.tx.QueryRowContext(ctx, selectChains+` WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return attribution.Chain{}, false, nil
	}
	return c, err == nil, wrap(err)
}

func (t *tx) ChainByNonce(ctx context.Context, nonce string, _ bool) (attribution.Chain, bool, error) {
	return t.chain(ctx, `nonce = ?`, nonce)
}

func (t *tx) RefusalRecord(ctx context.Context, nonce, reason string) (attribution.Chain, bool, error) {
	return t.chain(ctx, `nonce IS NULL AND claimed_nonce = ? AND reason = ?`, nonce, reason)
}

func (t *tx) ChainByTokenHash(ctx context.Context, th string, _ bool) (attribution.Chain, bool, error) {
	return t.chain(ctx, `token_hash = ? AND nonce IS NOT NULL`, th)
}

func (t *tx) ChainByID(ctx context.Context, id string) (attribution.Chain, bool, error) {
	return t.chain(ctx, `id = ?`, id)
}

func (t *tx) UpdateChains(ctx context.Context, cs []attribution.Chain) error {
	stmt, err := t.tx.PrepareContext(ctx, `UPDATE chains SET state = ?, reason = ?, countersignature = ?, advertiser_kid = ?, device_id = ?,
claimed_at = ?, install_ip = ?, install_asn = ?, installed_at = ?, activated_at = ?, resolved_at = ?, heartbeat_seq = ?,
last_heartbeat_at = ?, updated_at = ? WHERE id = ?`)
	if err != nil {
		return wrap(err)
	}
	defer stmt.Close()
	for _, c := range cs {
		res, err := stmt.ExecContext(ctx, string(c.State), c.Reason, c.Countersignature, c.AdvertiserKID, c.DeviceID,
			zmicros(c.ClaimedAt), c.InstallIP, c.InstallASN, zmicros(c.InstalledAt), zmicros(c.ActivatedAt), zmicros(c.ResolvedAt), c.HeartbeatSeq,
			zmicros(c.LastHeartbeatAt), micros(c.UpdatedAt), c.ID)
		if err != nil {
			return wrap(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errors.New("sqlite: updating chain " + c.ID + ": no such chain")
		}
	}
	return nil
}

// SettleChains writes only the columns settling changes, so that SQLite
// leaves the entries of the indexes on the other columns alone.
func (t *tx) SettleChains(ctx context.Context, cs []attribution.Chain) error {
	stmt, err := t.tx.PrepareContext(ctx, `UPDATE chains SET state = ?, reason = ?, resolved_at = ?, updated_at = ? WHERE id = ?`)
	if err != nil {
		return wrap(err)
	}
	defer stmt.Close()
	for _, c := range cs {
		res, err := stmt.ExecContext(ctx, string(c.State), c.Reason, zmicros(c.ResolvedAt), micros(c.UpdatedAt), c.ID)
		if err != nil {
			return wrap(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errors.New("sqlite: settling chain " + c.ID + ": no such chain")
		}
	}
	return nil
}

// CampaignForUpdate needs no row lock: the write transaction is the only
// writer.
func (t *tx) CampaignForUpdate(ctx context.Context, id string) (attribution.CampaignBudget, bool, error) {
	var c attribution.CampaignBudget
	err := t.tx.QueryRowContext(ctx, `SELECT app_id, daily_budget_cents FROM campaigns WHERE id = ?`, id).Scan(&c.AppID, &c.DailyBudgetCents)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, wrap(err)
}

// spendStates are the states whose price counts in a day's spend (also
// spelled out in migration 00025's triggers, which keep campaign_spend).
const spendStates = `state IN ('installed', 'activated_48h', 'cleared')`

// CampaignSpend reads the day's row of campaign_spend, which the triggers of
// migration 00025 keep equal to the sum over the day's chains. No row is 0.
func (t *tx) CampaignSpend(ctx context.Context, campaignID string, day time.Time) (int64, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, `SELECT coalesce((SELECT spent_cents FROM campaign_spend
WHERE campaign_id = ? AND day = ?), 0)`, campaignID, micros(day)).Scan(&n)
	return n, wrap(err)
}

// DaySpend reads the day's rows of campaign_spend by campaign_spend_day
// (00042).
func (t *tx) DaySpend(ctx context.Context, day time.Time) (map[string]int64, error) {
	return t.spends(ctx, `SELECT campaign_id, spent_cents FROM campaign_spend
WHERE day = ? AND spent_cents <> 0`, micros(day))
}

func (t *tx) SpendByCampaign(ctx context.Context, from, to time.Time) (map[string]int64, error) {
	return t.spends(ctx, `SELECT campaign_id, sum(price_cents) FROM chains
WHERE installed_at >= ? AND installed_at < ? AND `+spendStates+` GROUP BY campaign_id`, micros(from), micros(to))
}

// spends reads rows of (campaign_id, cents) into a map.
func (t *tx) spends(ctx context.Context, query string, args ...any) (map[string]int64, error) {
	rows, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, wrap(err)
		}
		out[id] = n
	}
	return out, wrap(rows.Err())
}

func (t *tx) InstallHistory(ctx context.Context, advertiserAppID, deviceID string, deviceSince time.Time, ip string, ipSince time.Time) (attribution.InstallHistory, error) {
	var h attribution.InstallHistory
	err := t.tx.QueryRowContext(ctx, `SELECT
  EXISTS (SELECT 1 FROM chains WHERE advertiser_app_id = ? AND device_id = ? AND installed_at > 0),
  (SELECT count(*) FROM chains WHERE device_id = ? AND installed_at > 0 AND installed_at >= ?),
  (SELECT count(*) FROM chains WHERE ? <> '' AND install_ip = ? AND installed_at > 0 AND installed_at >= ?)`,
		advertiserAppID, deviceID, deviceID, micros(deviceSince), ip, ip, micros(ipSince)).Scan(&h.DeviceHasApp, &h.ByDevice, &h.ByIP)
	return h, wrap(err)
}

func (t *tx) DueChains(ctx context.Context, closedBefore time.Time, limit int) ([]attribution.Due, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+chainColumnsOfC+`, coalesce(a.earn_mode, 'cash'), coalesce(v.status, ''),
  CASE WHEN a.status = 'suspended' THEN coalesce((SELECT h.reason FROM app_status_history h
    WHERE h.app_id = a.id AND h.to_status = 'suspended' ORDER BY h.seq DESC LIMIT 1), '') ELSE '' END
FROM chains c LEFT JOIN apps a ON a.id = c.publisher_app_id LEFT JOIN apps v ON v.id = c.advertiser_app_id
WHERE c.id IN (
  SELECT id FROM (SELECT id FROM chains WHERE state = 'activated_48h' ORDER BY activated_at LIMIT ?)
  UNION ALL
  SELECT id FROM (SELECT id FROM chains WHERE state = 'installed' AND installed_at <= ? ORDER BY installed_at LIMIT ?))
ORDER BY c.id LIMIT ?`, limit, micros(closedBefore), limit, limit)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []attribution.Due
	for rows.Next() {
		var mode, status, suspension string
		c, err := scanChain(rows, &mode, &status, &suspension)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, attribution.Due{Chain: c, PublisherEarnMode: ledger.EarnMode(mode), PublisherSuspension: suspension, AdvertiserStatus: xpromo.AppStatus(status)})
	}
	return out, wrap(rows.Err())
}

// InsertOutbox writes one row per event, its Also app's event in the same
// row.
func (t *tx) InsertOutbox(ctx context.Context, events []outbox.Event) error {
	return t.insert(ctx, "outbox", "id, kind, app_id, payload, created_at, also_id, also_app_id", len(events), 7, func(i int) []any {
		e := events[i]
		return []any{e.ID, string(e.Type), e.AppID, string(e.Data), micros(e.CreatedAt), null(e.Also.ID), null(e.Also.AppID)}
	})
}

// AppOutbox is every event of the app, oldest first: the events API's
// query without a cursor or a limit.
func (t *tx) AppOutbox(ctx context.Context, appID string) ([]outbox.Event, error) {
	return t.AppEvents(ctx, webhooks.EventQuery{AppID: appID, Limit: math.MaxInt32})
}

func (t *tx) AddFillCounts(ctx context.Context, counts []attribution.FillCount) error {
	stmt, err := t.tx.PrepareContext(ctx, `INSERT INTO fill_counts (day, campaign_id, advertiser_app_id, publisher_app_id, count) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (day, campaign_id, publisher_app_id) DO UPDATE SET count = count + excluded.count`)
	if err != nil {
		return wrap(err)
	}
	defer stmt.Close()
	for _, c := range counts {
		if _, err := stmt.ExecContext(ctx, micros(c.Day), c.CampaignID, c.AdvertiserAppID, c.PublisherAppID, c.Count); err != nil {
			return wrap(err)
		}
	}
	return nil
}

func (t *tx) RecordFillFlush(ctx context.Context, id string, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO fill_flushes (id, flushed_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, micros(at))
	if err != nil {
		return false, wrap(err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, wrap(err)
	}
	_, err = t.tx.ExecContext(ctx, `DELETE FROM fill_flushes WHERE flushed_at < ?`, micros(at.Add(-48*time.Hour)))
	return true, wrap(err)
}

func (t *tx) AppChainStats(ctx context.Context, appID string, from, to time.Time) (attribution.ChainStats, error) {
	s := attribution.ChainStats{FraudRejected: map[string]int64{}}
	f, tt := micros(from), micros(to)
	err := t.tx.QueryRowContext(ctx, `SELECT
  (SELECT coalesce(sum(count), 0) FROM fill_counts WHERE advertiser_app_id = ?1 AND day >= ?4 AND day <= ?3),
  (SELECT count(*) FROM chains WHERE advertiser_app_id = ?1 AND created_at BETWEEN ?2 AND ?3 AND nonce IS NOT NULL)`,
		appID, f, tt, micros(dayStart(from))).Scan(&s.Impressions, &s.Clicks)
	if err != nil {
		return s, wrap(err)
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT reason, count(*) FROM chains
WHERE advertiser_app_id = ? AND state = 'rejected' AND reason LIKE 'fraud\_%' ESCAPE '\' AND resolved_at BETWEEN ? AND ?
GROUP BY reason`, appID, f, tt)
	if err != nil {
		return s, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var reason string
		var n int64
		if err := rows.Scan(&reason, &n); err != nil {
			return s, wrap(err)
		}
		s.FraudRejected[reason] = n
	}
	return s, wrap(rows.Err())
}

func (t *tx) NetworkChainStats(ctx context.Context, from, to time.Time) (attribution.NetworkStats, error) {
	s := attribution.NetworkStats{CPISum: map[string]int64{}, CPICount: map[string]int64{}}
	f, tt := micros(from), micros(to)
	err := t.tx.QueryRowContext(ctx, `SELECT count(*),
  count(*) FILTER (WHERE state = 'rejected' AND reason LIKE 'fraud\_%' ESCAPE '\')
FROM chains WHERE created_at BETWEEN ? AND ?`, f, tt).Scan(&s.Chains, &s.FraudRejected)
	if err != nil {
		return s, wrap(err)
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT category, sum(price_cents), count(*) FROM chains
WHERE state = 'cleared' AND resolved_at BETWEEN ? AND ? GROUP BY category`, f, tt)
	if err != nil {
		return s, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var cat string
		var sum, n int64
		if err := rows.Scan(&cat, &sum, &n); err != nil {
			return s, wrap(err)
		}
		s.CPISum[cat], s.CPICount[cat] = sum, n
	}
	return s, wrap(rows.Err())
}

func dayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// PurgeFillCounts deletes up to limit rows of days before beforeDay, by the
// primary key's day prefix. No trigger fires on DELETE: the daily rollups
// keep the fills counted (retention).
func (t *tx) PurgeFillCounts(ctx context.Context, beforeDay time.Time, limit int) (int, error) {
	return t.purge(ctx, `DELETE FROM fill_counts WHERE rowid IN (SELECT rowid FROM fill_counts WHERE day < ? LIMIT ?)`, micros(beforeDay), limit)
}
