-- +goose Up
-- The network's daily figures, kept beside the per-app rows they sum
-- (BENCHMARKS.md, "A year at full scale": GET /v1/network-stats summed
-- every advertiser's row of stats_daily_apps and stats_daily_holds over 30
-- days, 98,000 rows at 2,000 apps, 31 ms p50 recomputed, the one read whose
-- cost followed the history). Here a day is at most 64 rows of each table.
--
-- Why shards: a single network row per day would be written by every claim
-- and every click of the day, and each writer holds its row lock until it
-- commits, so every claim of the network would queue on that one row.
-- Spread by a hash of the advertiser app over 64 rows, two writers meet
-- only when their advertisers share a shard (an advertiser's own claims
-- already queue on its wallet and on its per-app rollup rows). The shard
-- is fixed when a row is written and the reads sum every shard of a day,
-- so the figures do not depend on which hash spread them.
--
-- Kept exact by statement triggers on stats_daily_apps and
-- stats_daily_holds themselves, as 00037 keeps stats_daily_apps: whatever
-- writes those tables (the chains' and holds' triggers, the fill counters',
-- the bulk path's COPY) moves the network rows in the same transaction.
-- Each upsert runs in (day, shard) order, so two transactions lock the
-- shard rows of one statement in the same order. server/storetest Rollups
-- compares the network's figures read through them with the raw facts.
CREATE FUNCTION stats_network_shard(app_id text) RETURNS smallint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT (hashtext(app_id) & 63)::smallint $$;

-- The advertiser rows' chains and fraud rejections (by the chain's day).
CREATE TABLE stats_daily_network_chains (
    day          date     NOT NULL,
    shard        smallint NOT NULL,
    chains       bigint   NOT NULL DEFAULT 0,
    chains_fraud bigint   NOT NULL DEFAULT 0,
    PRIMARY KEY (day, shard)
) WITH (fillfactor = 50); -- room on the page for each update's new version (HOT)

-- The holds opened each day with what became of them (stats_daily_holds
-- summed over the advertisers).
CREATE TABLE stats_daily_network_holds (
    day                 date     NOT NULL,
    shard               smallint NOT NULL,
    opened              bigint   NOT NULL DEFAULT 0,
    resolved            bigint   NOT NULL DEFAULT 0,
    charged             bigint   NOT NULL DEFAULT 0,
    charged_cents       bigint   NOT NULL DEFAULT 0,
    floored             bigint   NOT NULL DEFAULT 0,
    floor_cents         bigint   NOT NULL DEFAULT 0,
    publisher_suspended bigint   NOT NULL DEFAULT 0,
    PRIMARY KEY (day, shard)
) WITH (fillfactor = 50);
REVOKE ALL ON stats_daily_network_chains, stats_daily_network_holds FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON stats_daily_network_chains, stats_daily_network_holds TO xpromo_app;

-- An insert adds its rows' figures, an update its new figures less its old
-- ones; sums of zero are not written (a fill count or a click changes an
-- advertiser row without changing its chains). The insert trigger has no
-- old rows to name, hence the two statements of each function.
-- +goose StatementBegin
CREATE FUNCTION stats_network_chains_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO stats_daily_network_chains AS t (day, shard, chains, chains_fraud)
        SELECT n.day, stats_network_shard(n.app_id), sum(n.chains), sum(n.chains_fraud)
        FROM new_rows n WHERE n.side = 'advertiser'
        GROUP BY 1, 2 HAVING sum(n.chains) <> 0 OR sum(n.chains_fraud) <> 0
        ORDER BY 1, 2
        ON CONFLICT (day, shard) DO UPDATE SET chains = t.chains + excluded.chains, chains_fraud = t.chains_fraud + excluded.chains_fraud;
        RETURN NULL;
    END IF;
    INSERT INTO stats_daily_network_chains AS t (day, shard, chains, chains_fraud)
    SELECT d.day, stats_network_shard(d.app_id), sum(d.chains), sum(d.chains_fraud)
    FROM (SELECT app_id, day, chains, chains_fraud FROM new_rows WHERE side = 'advertiser'
          UNION ALL
          SELECT app_id, day, -chains, -chains_fraud FROM old_rows WHERE side = 'advertiser') d
    GROUP BY 1, 2 HAVING sum(d.chains) <> 0 OR sum(d.chains_fraud) <> 0
    ORDER BY 1, 2
    ON CONFLICT (day, shard) DO UPDATE SET chains = t.chains + excluded.chains, chains_fraud = t.chains_fraud + excluded.chains_fraud;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_network_holds_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO stats_daily_network_holds AS t (day, shard, opened, resolved, charged, charged_cents, floored, floor_cents,
            publisher_suspended)
        SELECT n.day, stats_network_shard(n.app_id), sum(n.opened), sum(n.resolved), sum(n.charged), sum(n.charged_cents),
            sum(n.floored), sum(n.floor_cents), sum(n.publisher_suspended)
        FROM new_rows n
        GROUP BY 1, 2
        HAVING sum(n.opened) <> 0 OR sum(n.resolved) <> 0 OR sum(n.charged) <> 0 OR sum(n.charged_cents) <> 0
            OR sum(n.floored) <> 0 OR sum(n.floor_cents) <> 0 OR sum(n.publisher_suspended) <> 0
        ORDER BY 1, 2
        ON CONFLICT (day, shard) DO UPDATE SET opened = t.opened + excluded.opened, resolved = t.resolved + excluded.resolved,
            charged = t.charged + excluded.charged, charged_cents = t.charged_cents + excluded.charged_cents,
            floored = t.floored + excluded.floored, floor_cents = t.floor_cents + excluded.floor_cents,
            publisher_suspended = t.publisher_suspended + excluded.publisher_suspended;
        RETURN NULL;
    END IF;
    INSERT INTO stats_daily_network_holds AS t (day, shard, opened, resolved, charged, charged_cents, floored, floor_cents,
        publisher_suspended)
    SELECT d.day, stats_network_shard(d.app_id), sum(d.opened), sum(d.resolved), sum(d.charged), sum(d.charged_cents),
        sum(d.floored), sum(d.floor_cents), sum(d.publisher_suspended)
    FROM (SELECT app_id, day, opened, resolved, charged, charged_cents, floored, floor_cents, publisher_suspended FROM new_rows
          UNION ALL
          SELECT app_id, day, -opened, -resolved, -charged, -charged_cents, -floored, -floor_cents, -publisher_suspended
          FROM old_rows) d
    GROUP BY 1, 2
    HAVING sum(d.opened) <> 0 OR sum(d.resolved) <> 0 OR sum(d.charged) <> 0 OR sum(d.charged_cents) <> 0
        OR sum(d.floored) <> 0 OR sum(d.floor_cents) <> 0 OR sum(d.publisher_suspended) <> 0
    ORDER BY 1, 2
    ON CONFLICT (day, shard) DO UPDATE SET opened = t.opened + excluded.opened, resolved = t.resolved + excluded.resolved,
        charged = t.charged + excluded.charged, charged_cents = t.charged_cents + excluded.charged_cents,
        floored = t.floored + excluded.floored, floor_cents = t.floor_cents + excluded.floor_cents,
        publisher_suspended = t.publisher_suspended + excluded.publisher_suspended;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER stats_network_chains_insert AFTER INSERT ON stats_daily_apps REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION stats_network_chains_add();
CREATE TRIGGER stats_network_chains_update AFTER UPDATE ON stats_daily_apps REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION stats_network_chains_add();
CREATE TRIGGER stats_network_holds_insert AFTER INSERT ON stats_daily_holds REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION stats_network_holds_add();
CREATE TRIGGER stats_network_holds_update AFTER UPDATE ON stats_daily_holds REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION stats_network_holds_add();
-- Also under session_replication_role = replica: the rollups follow every write.
ALTER TABLE stats_daily_apps ENABLE ALWAYS TRIGGER stats_network_chains_insert;
ALTER TABLE stats_daily_apps ENABLE ALWAYS TRIGGER stats_network_chains_update;
ALTER TABLE stats_daily_holds ENABLE ALWAYS TRIGGER stats_network_holds_insert;
ALTER TABLE stats_daily_holds ENABLE ALWAYS TRIGGER stats_network_holds_update;

-- The history so far, after the triggers: creating them locked both tables
-- against writes until this migration commits, so nothing written between
-- the sums below and the triggers is missed.
INSERT INTO stats_daily_network_chains (day, shard, chains, chains_fraud)
SELECT day, stats_network_shard(app_id), sum(chains), sum(chains_fraud) FROM stats_daily_apps
WHERE side = 'advertiser' GROUP BY 1, 2 HAVING sum(chains) <> 0 OR sum(chains_fraud) <> 0;
INSERT INTO stats_daily_network_holds (day, shard, opened, resolved, charged, charged_cents, floored, floor_cents,
    publisher_suspended)
SELECT day, stats_network_shard(app_id), sum(opened), sum(resolved), sum(charged), sum(charged_cents), sum(floored),
    sum(floor_cents), sum(publisher_suspended) FROM stats_daily_holds GROUP BY 1, 2;

-- +goose Down
DROP TRIGGER stats_network_holds_update ON stats_daily_holds;
DROP TRIGGER stats_network_holds_insert ON stats_daily_holds;
DROP TRIGGER stats_network_chains_update ON stats_daily_apps;
DROP TRIGGER stats_network_chains_insert ON stats_daily_apps;
DROP FUNCTION stats_network_holds_add();
DROP FUNCTION stats_network_chains_add();
DROP TABLE stats_daily_network_holds, stats_daily_network_chains;
DROP FUNCTION stats_network_shard(text);
