-- +goose Up
-- Less work per claim (BENCHMARKS.md, "Claims, round 3"). A claim's
-- INSERT INTO ledger_lines (the escrow hold's two lines) fired
-- stats_ledger_lines_inserted, which found no charge, earn or clawback line
-- and still ran its upsert into stats_daily: an INSERT ... ON CONFLICT that
-- writes nothing fires stats_daily's statement triggers all the same, both
-- of them (AFTER INSERT and AFTER UPDATE), so each claim ran
-- stats_daily_apps_add four times, of which three had empty transition
-- tables. Both functions now return before their upsert when there is
-- nothing to sum. The figures are the same: an upsert of no rows writes
-- nothing.
-- chains_advertiser_device served only the device rule's probe, which now
-- reads the device's installs through chains_device_installed (see
-- installHistory): every installed chain wrote an entry nothing read.
DROP INDEX chains_advertiser_device;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stats_ledger_lines_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_lines l
                   WHERE l.type IN ('charge', 'earn', 'clawback') AND l.chain_id IS NOT NULL AND l.account_id LIKE 'wallet:%') THEN
        RETURN NULL;
    END IF;
    INSERT INTO stats_daily AS t (app_id, side, campaign_id, day, spend_cents, earned_cents)
    SELECT substr(l.account_id, 8), CASE WHEN l.type = 'charge' THEN 'advertiser' ELSE 'publisher' END,
        coalesce(c.campaign_id, ''), stats_utc_day(l.created_at),
        coalesce(-sum(l.amount) FILTER (WHERE l.type = 'charge'), 0), coalesce(sum(l.amount) FILTER (WHERE l.type <> 'charge'), 0)
    FROM new_lines l LEFT JOIN chains c ON c.id = l.chain_id
    WHERE l.type IN ('charge', 'earn', 'clawback') AND l.chain_id IS NOT NULL AND l.account_id LIKE 'wallet:%'
    GROUP BY 1, 2, 3, 4 ORDER BY 2, 1, 4, 3
    ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET spend_cents = t.spend_cents + excluded.spend_cents,
        earned_cents = t.earned_cents + excluded.earned_cents;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stats_daily_apps_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO stats_daily_apps AS t (app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected,
            spend_cents, earned_cents, chains, chains_fraud)
        SELECT n.app_id, n.side, n.day, sum(n.fills), sum(n.clicks), sum(n.installs), sum(n.activated), sum(n.cleared),
            sum(n.refunded), sum(n.rejected), sum(n.spend_cents), sum(n.earned_cents), sum(n.chains), sum(n.chains_fraud)
        FROM new_rows n
        GROUP BY n.side, n.app_id, n.day ORDER BY n.side, n.app_id, n.day
        ON CONFLICT (app_id, side, day) DO UPDATE SET
            fills = t.fills + excluded.fills, clicks = t.clicks + excluded.clicks, installs = t.installs + excluded.installs,
            activated = t.activated + excluded.activated, cleared = t.cleared + excluded.cleared,
            refunded = t.refunded + excluded.refunded, rejected = t.rejected + excluded.rejected,
            spend_cents = t.spend_cents + excluded.spend_cents, earned_cents = t.earned_cents + excluded.earned_cents,
            chains = t.chains + excluded.chains, chains_fraud = t.chains_fraud + excluded.chains_fraud;
        RETURN NULL;
    END IF;
    -- An update: each row's new figures less its old ones (a key that
    -- changed moves its figures), rows whose difference is all zero not
    -- written.
    INSERT INTO stats_daily_apps AS t (app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected,
        spend_cents, earned_cents, chains, chains_fraud)
    SELECT d.app_id, d.side, d.day, sum(d.fills), sum(d.clicks), sum(d.installs), sum(d.activated), sum(d.cleared),
        sum(d.refunded), sum(d.rejected), sum(d.spend_cents), sum(d.earned_cents), sum(d.chains), sum(d.chains_fraud)
    FROM (SELECT app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents,
              earned_cents, chains, chains_fraud FROM new_rows
          UNION ALL
          SELECT app_id, side, day, -fills, -clicks, -installs, -activated, -cleared, -refunded, -rejected, -spend_cents,
              -earned_cents, -chains, -chains_fraud FROM old_rows) d
    GROUP BY d.side, d.app_id, d.day
    HAVING (sum(d.fills), sum(d.clicks), sum(d.installs), sum(d.activated), sum(d.cleared), sum(d.refunded), sum(d.rejected),
            sum(d.spend_cents), sum(d.earned_cents), sum(d.chains), sum(d.chains_fraud))
        IS DISTINCT FROM (0::numeric, 0::numeric, 0::numeric, 0::numeric, 0::numeric, 0::numeric, 0::numeric, 0::numeric,
            0::numeric, 0::numeric, 0::numeric)
    ORDER BY d.side, d.app_id, d.day
    ON CONFLICT (app_id, side, day) DO UPDATE SET
        fills = t.fills + excluded.fills, clicks = t.clicks + excluded.clicks, installs = t.installs + excluded.installs,
        activated = t.activated + excluded.activated, cleared = t.cleared + excluded.cleared,
        refunded = t.refunded + excluded.refunded, rejected = t.rejected + excluded.rejected,
        spend_cents = t.spend_cents + excluded.spend_cents, earned_cents = t.earned_cents + excluded.earned_cents,
        chains = t.chains + excluded.chains, chains_fraud = t.chains_fraud + excluded.chains_fraud;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
CREATE INDEX chains_advertiser_device ON chains (advertiser_app_id, device_id) WHERE installed_at IS NOT NULL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stats_ledger_lines_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stats_daily AS t (app_id, side, campaign_id, day, spend_cents, earned_cents)
    SELECT substr(l.account_id, 8), CASE WHEN l.type = 'charge' THEN 'advertiser' ELSE 'publisher' END,
        coalesce(c.campaign_id, ''), stats_utc_day(l.created_at),
        coalesce(-sum(l.amount) FILTER (WHERE l.type = 'charge'), 0), coalesce(sum(l.amount) FILTER (WHERE l.type <> 'charge'), 0)
    FROM new_lines l LEFT JOIN chains c ON c.id = l.chain_id
    WHERE l.type IN ('charge', 'earn', 'clawback') AND l.chain_id IS NOT NULL AND l.account_id LIKE 'wallet:%'
    GROUP BY 1, 2, 3, 4 ORDER BY 2, 1, 4, 3
    ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET spend_cents = t.spend_cents + excluded.spend_cents,
        earned_cents = t.earned_cents + excluded.earned_cents;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stats_daily_apps_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO stats_daily_apps AS t (app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected,
            spend_cents, earned_cents, chains, chains_fraud)
        SELECT n.app_id, n.side, n.day, sum(n.fills), sum(n.clicks), sum(n.installs), sum(n.activated), sum(n.cleared),
            sum(n.refunded), sum(n.rejected), sum(n.spend_cents), sum(n.earned_cents), sum(n.chains), sum(n.chains_fraud)
        FROM new_rows n
        GROUP BY n.side, n.app_id, n.day ORDER BY n.side, n.app_id, n.day
        ON CONFLICT (app_id, side, day) DO UPDATE SET
            fills = t.fills + excluded.fills, clicks = t.clicks + excluded.clicks, installs = t.installs + excluded.installs,
            activated = t.activated + excluded.activated, cleared = t.cleared + excluded.cleared,
            refunded = t.refunded + excluded.refunded, rejected = t.rejected + excluded.rejected,
            spend_cents = t.spend_cents + excluded.spend_cents, earned_cents = t.earned_cents + excluded.earned_cents,
            chains = t.chains + excluded.chains, chains_fraud = t.chains_fraud + excluded.chains_fraud;
        RETURN NULL;
    END IF;
    -- An update: each row's new figures less its old ones (a key that
    -- changed moves its figures), rows whose difference is all zero not
    -- written.
    INSERT INTO stats_daily_apps AS t (app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected,
        spend_cents, earned_cents, chains, chains_fraud)
    SELECT d.app_id, d.side, d.day, sum(d.fills), sum(d.clicks), sum(d.installs), sum(d.activated), sum(d.cleared),
        sum(d.refunded), sum(d.rejected), sum(d.spend_cents), sum(d.earned_cents), sum(d.chains), sum(d.chains_fraud)
    FROM (SELECT app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents,
              earned_cents, chains, chains_fraud FROM new_rows
          UNION ALL
          SELECT app_id, side, day, -fills, -clicks, -installs, -activated, -cleared, -refunded, -rejected, -spend_cents,
              -earned_cents, -chains, -chains_fraud FROM old_rows) d
    GROUP BY d.side, d.app_id, d.day
    HAVING (sum(d.fills), sum(d.clicks), sum(d.installs), sum(d.activated), sum(d.cleared), sum(d.refunded), sum(d.rejected),
            sum(d.spend_cents), sum(d.earned_cents), sum(d.chains), sum(d.chains_fraud))
        IS DISTINCT FROM (0::numeric, 0::numeric, 0::numeric, 0::numeric, 0::numeric, 0::numeric, 0::numeric, 0::numeric,
            0::numeric, 0::numeric, 0::numeric)
    ORDER BY d.side, d.app_id, d.day
    ON CONFLICT (app_id, side, day) DO UPDATE SET
        fills = t.fills + excluded.fills, clicks = t.clicks + excluded.clicks, installs = t.installs + excluded.installs,
        activated = t.activated + excluded.activated, cleared = t.cleared + excluded.cleared,
        refunded = t.refunded + excluded.refunded, rejected = t.rejected + excluded.rejected,
        spend_cents = t.spend_cents + excluded.spend_cents, earned_cents = t.earned_cents + excluded.earned_cents,
        chains = t.chains + excluded.chains, chains_fraud = t.chains_fraud + excluded.chains_fraud;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
