package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/webhooks"
)

// attribution.Tx on PostgreSQL.

var (
	_ attribution.Tx             = (*tx)(nil)
	_ attribution.ClaimPipeliner = (*tx)(nil)
)

func init() {
	// Two registrations of one public key race on its kid: the loser runs
	// again and finds the winner's row.
	conflictConstraints["sdk_keys_pkey"] = true
	// A claim's fresh chain and a concurrent click or claim of its nonce
	// (InsertClaimedChain): the loser runs again and finds the winner's.
	conflictConstraints["chains_nonce_key"] = true
}

// ztime maps the zero time ("not yet") to NULL.
func ztime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func (t *tx) InsertSDKKey(ctx context.Context, k attribution.SDKKey) error {
	_, err := t.exec(ctx, `INSERT INTO sdk_keys (kid, app_id, public_key, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5)`,
		k.ID, k.AppID, []byte(k.PublicKey), k.CreatedAt, ztime(k.RevokedAt))
	return wrap(err, "inserting an SDK key")
}

const selectSDKKeys = `SELECT kid, app_id, public_key, created_at, revoked_at FROM sdk_keys`

func scanSDKKey(row pgx.Row) (attribution.SDKKey, error) {
	var k attribution.SDKKey
	var pub []byte
	var revoked *time.Time
	if err := row.Scan(&k.ID, &k.AppID, &pub, &k.CreatedAt, &revoked); err != nil {
		return k, err
	}
	k.PublicKey, k.CreatedAt, k.RevokedAt = pub, k.CreatedAt.UTC(), fromNullTime(revoked)
	return k, nil
}

func (t *tx) SDKKey(ctx context.Context, kid string) (attribution.SDKKey, bool, error) {
	var k attribution.SDKKey
	found := false
	err := t.query(ctx, selectSDKKeys+` WHERE kid = $1`, []any{kid}, func(rows pgx.Rows) error {
		var err error
		k, err = scanSDKKey(rows)
		found = err == nil
		return err
	})
	return k, found, wrap(err, "reading an SDK key")
}

func (t *tx) AppSDKKeys(ctx context.Context, appID string) ([]attribution.SDKKey, error) {
	var out []attribution.SDKKey
	err := t.query(ctx, selectSDKKeys+` WHERE app_id = $1 ORDER BY created_at, kid`, []any{appID}, func(rows pgx.Rows) error {
		k, err := scanSDKKey(rows)
		out = append(out, k)
		return err
	})
	return out, wrap(err, "reading SDK keys")
}

func (t *tx) RevokeSDKKey(ctx context.Context, kid string, at time.Time) error {
	_, err := t.exec(ctx, `UPDATE sdk_keys SET revoked_at = $2 WHERE kid = $1 AND revoked_at IS NULL`, kid, at)
	return wrap(err, "revoking an SDK key")
}

const chainColumns = `id, nonce, claimed_nonce, state, reason, campaign_id, publisher_app_id, advertiser_app_id, category, platform,
price_cents, offered_at, clicked_at, expires_at, click_token, token_hash, publisher_kid, countersignature, advertiser_kid,
device_id, claimed_at, click_ip, install_ip, install_asn, installed_at, activated_at, resolved_at, heartbeat_seq,
last_heartbeat_at, created_at, updated_at`

const selectChains = `SELECT ` + chainColumns + ` FROM chains`

// chainColumnsOfC is chainColumns qualified by the alias c, for joins.
var chainColumnsOfC = "c." + strings.NewReplacer(", ", ", c.", ",\n", ",\nc.").Replace(chainColumns)

func scanChain(row pgx.Row, extra ...any) (attribution.Chain, error) {
	var c attribution.Chain
	var nonce, claimed *string
	var state, platform string
	var offered, clicked, expires, claimedAt, installed, activated, resolved, lastHB *time.Time
	dest := []any{&c.ID, &nonce, &claimed, &state, &c.Reason, &c.CampaignID, &c.PublisherAppID, &c.AdvertiserAppID, &c.Category, &platform,
		&c.PriceCents, &offered, &clicked, &expires, &c.ClickToken, &c.TokenHash, &c.PublisherKID, &c.Countersignature, &c.AdvertiserKID,
		&c.DeviceID, &claimedAt, &c.ClickIP, &c.InstallIP, &c.InstallASN, &installed, &activated, &resolved, &c.HeartbeatSeq,
		&lastHB, &c.CreatedAt, &c.UpdatedAt}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return c, err
	}
	if nonce != nil {
		c.Nonce = *nonce
	}
	if claimed != nil {
		c.ClaimedNonce = *claimed
	}
	c.State, c.Platform = attribution.State(state), xpromo.Platform(platform)
	c.OfferedAt, c.ClickedAt, c.ExpiresAt = fromNullTime(offered), fromNullTime(clicked), fromNullTime(expires)
	c.ClaimedAt, c.InstalledAt, c.ActivatedAt = fromNullTime(claimedAt), fromNullTime(installed), fromNullTime(activated)
	c.ResolvedAt, c.LastHeartbeatAt = fromNullTime(resolved), fromNullTime(lastHB)
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

// InsertChain inserts c; with a nonce already stored it writes nothing and
// reports false. ON CONFLICT DO NOTHING waits for a concurrent transaction
// inserting the same nonce and, once that one commits, does nothing: of any
// number of racing inserts exactly one lands.
func (t *tx) InsertChain(ctx context.Context, c attribution.Chain) (bool, error) {
	n, err := t.exec(ctx, insertChain, chainArgs(c)...)
	return n == 1, wrap(err, "inserting a chain")
}

const insertChain = insertClaimedChain + `
ON CONFLICT (nonce) DO NOTHING`

func chainArgs(c attribution.Chain) []any {
	return []any{c.ID, nullable(c.Nonce), nullable(c.ClaimedNonce), string(c.State), c.Reason, c.CampaignID, c.PublisherAppID, c.AdvertiserAppID, c.Category, string(c.Platform),
		c.PriceCents, ztime(c.OfferedAt), ztime(c.ClickedAt), ztime(c.ExpiresAt), c.ClickToken, c.TokenHash, c.PublisherKID, c.Countersignature, c.AdvertiserKID,
		c.DeviceID, ztime(c.ClaimedAt), c.ClickIP, c.InstallIP, c.InstallASN, ztime(c.InstalledAt), ztime(c.ActivatedAt), ztime(c.ResolvedAt), c.HeartbeatSeq,
		ztime(c.LastHeartbeatAt), c.CreatedAt, c.UpdatedAt}
}

// InsertClaimedChain queues the insert of a claim's fresh chain (sent with
// the next statement or COMMIT). Without ON CONFLICT: a chain of the nonce
// inserted meanwhile violates chains_nonce_key, a conflict (wrap) that
// fails the transaction, which runs again and finds that chain.
func (t *tx) InsertClaimedChain(ctx context.Context, c attribution.Chain) error {
	if t.err != nil {
		return t.err
	}
	b := &pgx.Batch{}
	b.Queue(insertClaimedChain, chainArgs(c)...)
	t.pending = append(t.pending, b.QueuedQueries...)
	return nil
}

const insertClaimedChain = `INSERT INTO chains (` + chainColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31)`

// ClaimReads sends a claim's reads in one round trip, in the order of the
// statements they replace (attribution.ClaimPipeliner): the chain's lock
// first, the campaign's lock before the spend it guards, the ledger's
// account locks last.
func (t *tx) ClaimReads(ctx context.Context, q attribution.ClaimQuery) (attribution.ClaimState, error) {
	var st attribution.ClaimState
	b := &pgx.Batch{}
	b.Queue(selectChains+` WHERE nonce = $1 FOR UPDATE`, q.Nonce).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var err error
			if st.Chain, err = scanChain(rows); err != nil {
				return err
			}
			st.ChainFound = true
		}
		return rows.Err()
	})
	b.Queue(installHistory, q.AdvertiserAppID, q.DeviceID, q.DeviceSince, q.IP, q.IPSince).QueryRow(func(row pgx.Row) error {
		return row.Scan(&st.History.DeviceHasApp, &st.History.ByDevice, &st.History.ByIP)
	})
	b.Queue(campaignForUpdate, q.CampaignID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&st.Campaign.AppID, &st.Campaign.DailyBudgetCents); err != nil {
				return err
			}
			st.CampaignFound = true
		}
		return rows.Err()
	})
	b.Queue(campaignSpend, q.CampaignID, q.SpendDay).QueryRow(func(row pgx.Row) error {
		return row.Scan(&st.Spent)
	})
	t.queueLedgerReads(b, q.Ledger)
	if err := t.send(ctx, b); err != nil {
		t.pre = nil
		return st, wrap(err, "reading a claim's state")
	}
	return st, nil
}

// LedgerReads sends ledger.Apply's reads for ops in one round trip
// (attribution.ClaimPipeliner): a claim's hold, once its chain was found.
func (t *tx) LedgerReads(ctx context.Context, ops []ledger.Operation) error {
	b := &pgx.Batch{}
	t.queueLedgerReads(b, ops)
	if err := t.send(ctx, b); err != nil {
		t.pre = nil
		return wrap(err, "reading a hold's ledger state")
	}
	return nil
}

func (t *tx) chain(ctx context.Context, where string, lock bool, args ...any) (attribution.Chain, bool, error) {
	q := selectChains + ` WHERE ` + where
	if lock {
		q += ` FOR UPDATE`
	}
	var c attribution.Chain
	found := false
	err := t.query(ctx, q, args, func(rows pgx.Rows) error {
		var err error
		c, err = scanChain(rows)
		found = err == nil
		return err
	})
	return c, found, wrap(err, "reading a chain")
}

func (t *tx) ChainByNonce(ctx context.Context, nonce string, lock bool) (attribution.Chain, bool, error) {
	return t.chain(ctx, `nonce = $1`, lock, nonce)
}

func (t *tx) RefusalRecord(ctx context.Context, nonce, reason string) (attribution.Chain, bool, error) {
	return t.chain(ctx, `nonce IS NULL AND claimed_nonce = $1 AND reason = $2`, false, nonce, reason)
}

func (t *tx) ChainByTokenHash(ctx context.Context, th string, lock bool) (attribution.Chain, bool, error) {
	return t.chain(ctx, `token_hash = $1 AND nonce IS NOT NULL`, lock, th)
}

func (t *tx) ChainByID(ctx context.Context, id string) (attribution.Chain, bool, error) {
	return t.chain(ctx, `id = $1`, false, id)
}

const updateChain = `UPDATE chains SET state = $2, reason = $3, countersignature = $4, advertiser_kid = $5, device_id = $6,
claimed_at = $7, install_ip = $8, install_asn = $9, installed_at = $10, activated_at = $11, resolved_at = $12,
heartbeat_seq = $13, last_heartbeat_at = $14, updated_at = $15 WHERE id = $1`

const updateChains = `UPDATE chains c SET state = v.state, reason = v.reason, countersignature = v.countersignature,
  advertiser_kid = v.advertiser_kid, device_id = v.device_id, claimed_at = v.claimed_at, install_ip = v.install_ip,
  install_asn = v.install_asn, installed_at = v.installed_at, activated_at = v.activated_at, resolved_at = v.resolved_at,
  heartbeat_seq = v.heartbeat_seq, last_heartbeat_at = v.last_heartbeat_at, updated_at = v.updated_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[],
  $9::bigint[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[], $13::bigint[], $14::timestamptz[], $15::timestamptz[])
  AS v(id, state, reason, countersignature, advertiser_kid, device_id, claimed_at, install_ip, install_asn, installed_at,
       activated_at, resolved_at, heartbeat_seq, last_heartbeat_at, updated_at)
WHERE c.id = v.id`

// UpdateChains queues the update; it is sent with the next statement or with
// COMMIT, like the ledger's Append, and fails the transaction when a chain
// does not exist.
func (t *tx) UpdateChains(ctx context.Context, cs []attribution.Chain) error {
	if t.err != nil {
		return t.err
	}
	if len(cs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	check := func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() != int64(len(cs)) {
			return fmt.Errorf("postgres: %d of %d chains updated", ct.RowsAffected(), len(cs))
		}
		return nil
	}
	if len(cs) == 1 {
		c := cs[0]
		b.Queue(updateChain, c.ID, string(c.State), c.Reason, c.Countersignature, c.AdvertiserKID, c.DeviceID,
			ztime(c.ClaimedAt), c.InstallIP, c.InstallASN, ztime(c.InstalledAt), ztime(c.ActivatedAt), ztime(c.ResolvedAt),
			c.HeartbeatSeq, ztime(c.LastHeartbeatAt), c.UpdatedAt).Exec(check)
	} else {
		n := len(cs)
		id, state, reason, cs1, akid, dev, ip := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		claimed, installed, activated, resolved, lastHB, updated := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]time.Time, n)
		asn, seq := make([]int64, n), make([]int64, n)
		ptr := func(t time.Time) *time.Time {
			if t.IsZero() {
				return nil
			}
			return &t
		}
		for i, c := range cs {
			id[i], state[i], reason[i], cs1[i], akid[i], dev[i], ip[i] = c.ID, string(c.State), c.Reason, c.Countersignature, c.AdvertiserKID, c.DeviceID, c.InstallIP
			claimed[i], installed[i], activated[i], resolved[i], lastHB[i], updated[i] = ptr(c.ClaimedAt), ptr(c.InstalledAt), ptr(c.ActivatedAt), ptr(c.ResolvedAt), ptr(c.LastHeartbeatAt), c.UpdatedAt
			asn[i], seq[i] = c.InstallASN, c.HeartbeatSeq
		}
		b.Queue(updateChains, id, state, reason, cs1, akid, dev, claimed, ip, asn, installed, activated, resolved, seq, lastHB, updated).Exec(check)
	}
	t.pending = append(t.pending, b.QueuedQueries...)
	return nil
}

const settleChains = `UPDATE chains c SET state = v.state, reason = v.reason, resolved_at = v.resolved_at, updated_at = v.updated_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[]) AS v(id, state, reason, resolved_at, updated_at)
WHERE c.id = v.id`

// SettleChains queues the sweep's update of the settled chains (sent with
// COMMIT); the transaction fails when a chain does not exist.
func (t *tx) SettleChains(ctx context.Context, cs []attribution.Chain) error {
	if t.err != nil {
		return t.err
	}
	n := len(cs)
	if n == 0 {
		return nil
	}
	id, state, reason, resolved, updated := make([]string, n), make([]string, n), make([]string, n), make([]*time.Time, n), make([]time.Time, n)
	for i, c := range cs {
		id[i], state[i], reason[i], updated[i] = c.ID, string(c.State), c.Reason, c.UpdatedAt
		if !c.ResolvedAt.IsZero() {
			resolved[i] = &cs[i].ResolvedAt
		}
	}
	b := &pgx.Batch{}
	b.Queue(settleChains, id, state, reason, resolved, updated).Exec(func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() != int64(n) {
			return fmt.Errorf("postgres: %d of %d chains settled", ct.RowsAffected(), n)
		}
		return nil
	})
	t.pending = append(t.pending, b.QueuedQueries...)
	return nil
}

const campaignForUpdate = `SELECT app_id, daily_budget_cents FROM campaigns WHERE id = $1 FOR UPDATE`

// CampaignForUpdate locks the campaign's row: install claims of one
// campaign check its daily budget one after the other.
func (t *tx) CampaignForUpdate(ctx context.Context, id string) (attribution.CampaignBudget, bool, error) {
	var c attribution.CampaignBudget
	err := t.queryRow(ctx, campaignForUpdate, []any{id}, &c.AppID, &c.DailyBudgetCents)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, wrap(err, "locking a campaign")
}

// spendStates are the states whose price counts in a day's spend (also
// spelled out in migration 00025's triggers, which keep campaign_spend).
const spendStates = `state IN ('installed', 'activated_48h', 'cleared')`

// campaignSpend reads the day's row of campaign_spend, which the triggers of
// migration 00025 keep equal to the sum over the day's chains: one index
// probe, however many installs the campaign made that day. No row is 0.
const campaignSpend = `SELECT coalesce((SELECT spent_cents FROM campaign_spend
WHERE campaign_id = $1 AND day = ($2::timestamptz AT TIME ZONE 'UTC')::date), 0)::bigint`

func (t *tx) CampaignSpend(ctx context.Context, campaignID string, day time.Time) (int64, error) {
	var n int64
	err := t.queryRow(ctx, campaignSpend, []any{campaignID, day}, &n)
	return n, wrap(err, "reading a campaign's spend")
}

// daySpend reads the day's rows of campaign_spend by campaign_spend_day
// (00042).
const daySpend = `SELECT campaign_id, spent_cents FROM campaign_spend
WHERE day = ($1::timestamptz AT TIME ZONE 'UTC')::date AND spent_cents <> 0`

func (t *tx) DaySpend(ctx context.Context, day time.Time) (map[string]int64, error) {
	out, err := t.spends(ctx, daySpend, day)
	return out, wrap(err, "reading the day's spend")
}

func (t *tx) SpendByCampaign(ctx context.Context, from, to time.Time) (map[string]int64, error) {
	out, err := t.spends(ctx, `SELECT campaign_id, sum(price_cents)::bigint FROM chains
WHERE installed_at >= $1 AND installed_at < $2 AND `+spendStates+` GROUP BY campaign_id`, from, to)
	return out, wrap(err, "summing spend by campaign")
}

// spends reads rows of (campaign_id, cents) into a map.
func (t *tx) spends(ctx context.Context, query string, args ...any) (map[string]int64, error) {
	out := map[string]int64{}
	err := t.query(ctx, query, args, func(rows pgx.Rows) error {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		out[id] = n
		return nil
	})
	return out, err
}

// installHistory reads the device rules' figures from the device's
// installs (chains_device_installed): whether one is of the advertiser's
// app, and how many fall in the device window. The rule used to probe
// (advertiser_app_id, device_id) on its own; the generic plan a connection
// cached while chains was small probed chains_advertiser_created instead,
// reading every chain of the advertiser on each claim (BENCHMARKS.md,
// "Claims, round 3"). A device's installs are few (one per advertiser app,
// and DeviceInstalls per window), and only this index leads with device_id.
const installHistory = `SELECT
  coalesce(bool_or(advertiser_app_id = $1), false),
  count(*) FILTER (WHERE installed_at >= $3),
  (SELECT count(*) FROM chains WHERE $4 <> '' AND install_ip = $4 AND installed_at >= $5)
FROM chains WHERE device_id = $2 AND installed_at IS NOT NULL`

func (t *tx) InstallHistory(ctx context.Context, advertiserAppID, deviceID string, deviceSince time.Time, ip string, ipSince time.Time) (attribution.InstallHistory, error) {
	var h attribution.InstallHistory
	err := t.queryRow(ctx, installHistory, []any{advertiserAppID, deviceID, deviceSince, ip, ipSince}, &h.DeviceHasApp, &h.ByDevice, &h.ByIP)
	return h, wrap(err, "reading a device's installs")
}

// DueChains claims due chains with FOR UPDATE SKIP LOCKED: rows another
// sweeper holds are skipped, so concurrent sweepers settle disjoint batches.
// READ COMMITTED re-checks each locked row's state on its newest version,
// so a claimed chain is still due. It returns up to limit activated chains
// and up to limit closed ones.
func (t *tx) DueChains(ctx context.Context, closedBefore time.Time, limit int) ([]attribution.Due, error) {
	var out []attribution.Due
	err := t.query(ctx, `WITH activated AS (
  SELECT id FROM chains WHERE state = 'activated_48h' ORDER BY activated_at LIMIT $1 FOR UPDATE SKIP LOCKED
), closed AS (
  SELECT id FROM chains WHERE state = 'installed' AND installed_at <= $2 ORDER BY installed_at LIMIT $1 FOR UPDATE SKIP LOCKED
)
SELECT `+chainColumnsOfC+`, coalesce(a.earn_mode, 'cash'), coalesce(v.status, ''),
  CASE WHEN a.status = 'suspended' THEN coalesce((SELECT h.reason FROM app_status_history h
    WHERE h.app_id = a.id AND h.to_status = 'suspended' ORDER BY h.seq DESC LIMIT 1), '') ELSE '' END
FROM chains c LEFT JOIN apps a ON a.id = c.publisher_app_id LEFT JOIN apps v ON v.id = c.advertiser_app_id
WHERE c.id IN (SELECT id FROM activated UNION ALL SELECT id FROM closed)
ORDER BY c.id`, []any{limit, closedBefore}, func(rows pgx.Rows) error {
		var mode, status, suspension string
		c, err := scanChain(rows, &mode, &status, &suspension)
		if err != nil {
			return err
		}
		out = append(out, attribution.Due{Chain: c, PublisherEarnMode: ledger.EarnMode(mode), PublisherSuspension: suspension, AdvertiserStatus: xpromo.AppStatus(status)})
		return nil
	})
	return out, wrap(err, "claiming due chains")
}

const insertOutbox = `INSERT INTO outbox (id, kind, app_id, payload, created_at, also_id, also_app_id)
SELECT id, kind, app_id, payload::jsonb, created_at, nullif(also_id, ''), nullif(also_app_id, '')
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[])
  AS v(id, kind, app_id, payload, created_at, also_id, also_app_id)`

// copyOutboxRows is the number of events from which InsertOutbox sends them
// at once with COPY rather than queueing an INSERT to go with COMMIT. COPY
// costs two round trips of its own (pgx describes the table first) but less
// work in PostgreSQL: a sweep batch's 1,000 rows took 21 ms against 28 ms
// for INSERT … SELECT FROM unnest (medians of 15, BENCHMARKS.md "Clearing
// toward 10,000 a second"). A claim's few rows ride with its COMMIT.
const copyOutboxRows = 100

var outboxColumns = []string{"id", "kind", "app_id", "payload", "created_at", "also_id", "also_app_id"}

// InsertOutbox writes one row per event, its Also app's event in the same
// row: a few rows are queued (sent with COMMIT), many are copied at once.
func (t *tx) InsertOutbox(ctx context.Context, events []outbox.Event) error {
	if t.err != nil {
		return t.err
	}
	n := len(events)
	if n == 0 {
		return nil
	}
	if n >= copyOutboxRows {
		return t.copyOutbox(ctx, events)
	}
	id, kind, app, payload, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	alsoID, alsoApp := make([]string, n), make([]string, n)
	for i, e := range events {
		id[i], kind[i], app[i], payload[i], at[i] = e.ID, string(e.Type), e.AppID, string(e.Data), e.CreatedAt
		alsoID[i], alsoApp[i] = e.Also.ID, e.Also.AppID
	}
	b := &pgx.Batch{}
	b.Queue(insertOutbox, id, kind, app, payload, at, alsoID, alsoApp)
	t.pending = append(t.pending, b.QueuedQueries...)
	return nil
}

// copyOutbox sends BEGIN and the held-back statements, if any, then COPY:
// the rows are written in statement order, in the transaction.
func (t *tx) copyOutbox(ctx context.Context, events []outbox.Event) error {
	if !t.begun || len(t.pending) > 0 {
		if err := t.send(ctx, &pgx.Batch{}); err != nil {
			return err
		}
	}
	_, err := t.conn.CopyFrom(ctx, pgx.Identifier{"outbox"}, outboxColumns, pgx.CopyFromSlice(len(events), func(i int) ([]any, error) {
		e := events[i]
		return []any{e.ID, string(e.Type), e.AppID, string(e.Data), e.CreatedAt, nullable(e.Also.ID), nullable(e.Also.AppID)}, nil
	}))
	if err != nil {
		t.err = err
	}
	return wrap(err, "copying outbox events")
}

// AppOutbox is every event of the app, oldest first: the events API's
// query without a cursor or a limit.
func (t *tx) AppOutbox(ctx context.Context, appID string) ([]outbox.Event, error) {
	return t.AppEvents(ctx, webhooks.EventQuery{AppID: appID, Limit: math.MaxInt32})
}

func (t *tx) AddFillCounts(ctx context.Context, counts []attribution.FillCount) error {
	n := len(counts)
	if n == 0 {
		return nil
	}
	day, cmp, adv, pub, count := make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, c := range counts {
		day[i], cmp[i], adv[i], pub[i], count[i] = c.Day, c.CampaignID, c.AdvertiserAppID, c.PublisherAppID, c.Count
	}
	_, err := t.exec(ctx, `INSERT INTO fill_counts (day, campaign_id, advertiser_app_id, publisher_app_id, count)
SELECT (d AT TIME ZONE 'UTC')::date, c, a, p, n FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS v(d, c, a, p, n)
ON CONFLICT (day, campaign_id, publisher_app_id) DO UPDATE SET count = fill_counts.count + excluded.count`,
		day, cmp, adv, pub, count)
	return wrap(err, "adding fill counts")
}

func (t *tx) RecordFillFlush(ctx context.Context, id string, at time.Time) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO fill_flushes (id, flushed_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, id, at)
	if err != nil || n == 0 {
		return false, wrap(err, "recording a fill flush")
	}
	_, err = t.exec(ctx, `DELETE FROM fill_flushes WHERE flushed_at < $1`, at.Add(-fillFlushesKept))
	return true, wrap(err, "forgetting old fill flushes")
}

// fillFlushesKept is how long a fill flush's id is remembered: far longer
// than any flush is retried.
const fillFlushesKept = 48 * time.Hour

// AppChainStats and NetworkChainStats (and their rollup readers in
// rollups.go) each answer in one statement, one round trip: the totals as
// the row whose key is NULL, the counts by key as the rows after it. A
// stats read waits for every round trip it makes (on a database the claims
// keep busy, each waits for its CPU too: BENCHMARKS.md, "Stats in fewer
// round trips").

func (t *tx) AppChainStats(ctx context.Context, appID string, from, to time.Time) (attribution.ChainStats, error) {
	s := attribution.ChainStats{FraudRejected: map[string]int64{}}
	err := t.query(ctx, `SELECT NULL::text,
  (SELECT coalesce(sum(count), 0)::bigint FROM fill_counts WHERE advertiser_app_id = $1 AND day >= ($2 AT TIME ZONE 'UTC')::date AND day <= ($3 AT TIME ZONE 'UTC')::date),
  (SELECT count(*) FROM chains WHERE advertiser_app_id = $1 AND created_at BETWEEN $2 AND $3 AND nonce IS NOT NULL)
UNION ALL
SELECT reason, count(*), 0 FROM chains
WHERE advertiser_app_id = $1 AND state = 'rejected' AND reason LIKE 'fraud\_%' AND resolved_at BETWEEN $2 AND $3
GROUP BY reason`, []any{appID, from, to}, scanKeyed(&s.Impressions, &s.Clicks, func(reason string, n, _ int64) {
		s.FraudRejected[reason] = n
	}))
	return s, wrap(err, "aggregating an app's chains")
}

func (t *tx) NetworkChainStats(ctx context.Context, from, to time.Time) (attribution.NetworkStats, error) {
	s := attribution.NetworkStats{CPISum: map[string]int64{}, CPICount: map[string]int64{}}
	err := t.query(ctx, `SELECT NULL::text, count(*), count(*) FILTER (WHERE state = 'rejected' AND reason LIKE 'fraud\_%')
FROM chains WHERE created_at BETWEEN $1 AND $2
UNION ALL
SELECT category, sum(price_cents)::bigint, count(*) FROM chains
WHERE state = 'cleared' AND resolved_at BETWEEN $1 AND $2 GROUP BY category`, []any{from, to}, scanKeyed(&s.Chains, &s.FraudRejected, func(cat string, sum, n int64) {
		s.CPISum[cat], s.CPICount[cat] = sum, n
	}))
	return s, wrap(err, "aggregating the network's chains")
}

// scanKeyed scans the rows (key, a, b) of a statement above: the row with
// a NULL key into a and b, each other row into keyed.
func scanKeyed(a, b *int64, keyed func(key string, a, b int64)) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var key *string
		var x, y int64
		if err := rows.Scan(&key, &x, &y); err != nil {
			return err
		}
		if key == nil {
			*a, *b = x, y
		} else {
			keyed(*key, x, y)
		}
		return nil
	}
}

// PurgeFillCounts deletes up to limit rows of days before beforeDay, by the
// primary key's day prefix (rows another purge holds are left to it). No
// trigger fires on DELETE: the daily rollups keep the fills counted
// (retention).
func (t *tx) PurgeFillCounts(ctx context.Context, beforeDay time.Time, limit int) (int, error) {
	n, err := t.exec(ctx, `DELETE FROM fill_counts WHERE ctid = ANY (ARRAY(SELECT ctid FROM fill_counts WHERE day < ($1::timestamptz AT TIME ZONE 'UTC')::date LIMIT $2 FOR UPDATE SKIP LOCKED))`, beforeDay, limit)
	return int(n), wrap(err, "purging fill counts")
}
