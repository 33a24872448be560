-- +goose Up
-- stats_daily_apps: stats_daily summed over campaigns, one row per (app,
-- side, day). The daily series of an app (GET /v1/stats/daily without
-- campaign_id), its /stats figures and the network's read every campaign's
-- row of each day; a publisher serves a dozen or more campaigns a day, so a
-- 366-day series summed some 10,000 rows (BENCHMARKS.md, "A year of
-- history", wip/reads), each on a heap page of its own (rows of a day are
-- written as the day happens, among every other app's). Here it reads 366
-- rows a side, whatever the campaigns.
--
-- Kept exact by statement triggers on stats_daily itself, so every writer
-- of stats_daily (00032's stats_add, 00036's statement triggers, any later
-- one) keeps it without knowing of it: an insert adds its rows' figures, an
-- update adds new minus old, summed per (app, side, day) and upserted once
-- per row, in stats_daily's order (advertiser rows before publisher rows,
-- then by app and day), in the same transaction. server/storetest Rollups
-- compares every day of the series, with and without a campaign, with the
-- facts.
CREATE TABLE stats_daily_apps (
    app_id       text COLLATE "C" NOT NULL,
    side         text COLLATE "C" NOT NULL CHECK (side IN ('advertiser', 'publisher')),
    day          date             NOT NULL,
    fills        bigint           NOT NULL DEFAULT 0,
    clicks       bigint           NOT NULL DEFAULT 0,
    installs     bigint           NOT NULL DEFAULT 0,
    activated    bigint           NOT NULL DEFAULT 0,
    cleared      bigint           NOT NULL DEFAULT 0,
    refunded     bigint           NOT NULL DEFAULT 0,
    rejected     bigint           NOT NULL DEFAULT 0,
    spend_cents  bigint           NOT NULL DEFAULT 0,
    earned_cents bigint           NOT NULL DEFAULT 0,
    chains       bigint           NOT NULL DEFAULT 0,
    chains_fraud bigint           NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, side, day)
) WITH (fillfactor = 80);
-- The network's figures sum every app's advertiser rows of a window.
CREATE INDEX stats_daily_apps_network ON stats_daily_apps (day) WHERE side = 'advertiser';
REVOKE ALL ON stats_daily_apps FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON stats_daily_apps TO xpromo_app;

INSERT INTO stats_daily_apps (app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected,
    spend_cents, earned_cents, chains, chains_fraud)
SELECT app_id, side, day, sum(fills), sum(clicks), sum(installs), sum(activated), sum(cleared), sum(refunded),
    sum(rejected), sum(spend_cents), sum(earned_cents), sum(chains), sum(chains_fraud)
FROM stats_daily GROUP BY app_id, side, day;

-- +goose StatementBegin
CREATE FUNCTION stats_daily_apps_add() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER stats_daily_apps_insert AFTER INSERT ON stats_daily REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION stats_daily_apps_add();
CREATE TRIGGER stats_daily_apps_update AFTER UPDATE ON stats_daily REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION stats_daily_apps_add();
-- Also under session_replication_role = replica: the rollups follow every write.
ALTER TABLE stats_daily ENABLE ALWAYS TRIGGER stats_daily_apps_insert;
ALTER TABLE stats_daily ENABLE ALWAYS TRIGGER stats_daily_apps_update;

-- The fill counts' rollup trigger (00032's last row trigger on stats_daily)
-- runs once per statement, as 00036's do: a flush of many counter rows
-- upserts each stats_daily row once, so the statement triggers above fire
-- once per flush instead of twice per counter row. Same figure: an insert
-- adds its count, an update its new count less its old (a row whose key
-- moved takes all of it along), sums of zero not written.
-- +goose StatementBegin
CREATE FUNCTION stats_fill_counts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO stats_daily AS t (app_id, side, campaign_id, day, fills)
        SELECT d.app_id, d.side, d.campaign_id, d.day, sum(d.n)
        FROM (SELECT advertiser_app_id AS app_id, 'advertiser' AS side, campaign_id, day, count AS n FROM new_counts
              UNION ALL
              SELECT publisher_app_id, 'publisher', campaign_id, day, count FROM new_counts) d
        GROUP BY d.side, d.app_id, d.day, d.campaign_id HAVING sum(d.n) <> 0
        ORDER BY d.side, d.app_id, d.day, d.campaign_id
        ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET fills = t.fills + excluded.fills;
        RETURN NULL;
    END IF;
    INSERT INTO stats_daily AS t (app_id, side, campaign_id, day, fills)
    SELECT d.app_id, d.side, d.campaign_id, d.day, sum(d.n)
    FROM (SELECT advertiser_app_id AS app_id, 'advertiser' AS side, campaign_id, day, count AS n FROM new_counts
          UNION ALL
          SELECT publisher_app_id, 'publisher', campaign_id, day, count FROM new_counts
          UNION ALL
          SELECT advertiser_app_id, 'advertiser', campaign_id, day, -count FROM old_counts
          UNION ALL
          SELECT publisher_app_id, 'publisher', campaign_id, day, -count FROM old_counts) d
    GROUP BY d.side, d.app_id, d.day, d.campaign_id HAVING sum(d.n) <> 0
    ORDER BY d.side, d.app_id, d.day, d.campaign_id
    ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET fills = t.fills + excluded.fills;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER fill_counts_stats ON fill_counts;
CREATE TRIGGER fill_counts_stats_insert AFTER INSERT ON fill_counts REFERENCING NEW TABLE AS new_counts
FOR EACH STATEMENT EXECUTE FUNCTION stats_fill_counts_changed();
CREATE TRIGGER fill_counts_stats_update AFTER UPDATE ON fill_counts REFERENCING OLD TABLE AS old_counts NEW TABLE AS new_counts
FOR EACH STATEMENT EXECUTE FUNCTION stats_fill_counts_changed();
ALTER TABLE fill_counts ENABLE ALWAYS TRIGGER fill_counts_stats_insert;
ALTER TABLE fill_counts ENABLE ALWAYS TRIGGER fill_counts_stats_update;

-- +goose Down
DROP TRIGGER fill_counts_stats_update ON fill_counts;
DROP TRIGGER fill_counts_stats_insert ON fill_counts;
DROP FUNCTION stats_fill_counts_changed();
CREATE TRIGGER fill_counts_stats AFTER INSERT OR UPDATE ON fill_counts FOR EACH ROW EXECUTE FUNCTION stats_fill_counts();
ALTER TABLE fill_counts ENABLE ALWAYS TRIGGER fill_counts_stats;
DROP TRIGGER stats_daily_apps_update ON stats_daily;
DROP TRIGGER stats_daily_apps_insert ON stats_daily;
DROP FUNCTION stats_daily_apps_add();
DROP TABLE stats_daily_apps;
