-- +goose Up
-- The network's daily figures (PostgreSQL's 00043: read its comments), kept
-- beside the per-app rows by row triggers on stats_daily_apps and
-- stats_daily_holds, so every writer of those moves them in the same
-- transaction. SQLite has one writer at a time and no row locks, so the
-- network has one row a day (shard 0): the column is kept so the reads are
-- PostgreSQL's. An upsert's update fires the update triggers.
CREATE TABLE stats_daily_network_chains (
    day          INTEGER NOT NULL,
    shard        INTEGER NOT NULL,
    chains       INTEGER NOT NULL DEFAULT 0,
    chains_fraud INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, shard)
) STRICT, WITHOUT ROWID;

CREATE TABLE stats_daily_network_holds (
    day                 INTEGER NOT NULL,
    shard               INTEGER NOT NULL,
    opened              INTEGER NOT NULL DEFAULT 0,
    resolved            INTEGER NOT NULL DEFAULT 0,
    charged             INTEGER NOT NULL DEFAULT 0,
    charged_cents       INTEGER NOT NULL DEFAULT 0,
    floored             INTEGER NOT NULL DEFAULT 0,
    floor_cents         INTEGER NOT NULL DEFAULT 0,
    publisher_suspended INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, shard)
) STRICT, WITHOUT ROWID;

INSERT INTO stats_daily_network_chains (day, shard, chains, chains_fraud)
SELECT day, 0, sum(chains), sum(chains_fraud) FROM stats_daily_apps WHERE side = 'advertiser' GROUP BY day;
INSERT INTO stats_daily_network_holds (day, shard, opened, resolved, charged, charged_cents, floored, floor_cents,
    publisher_suspended)
SELECT day, 0, sum(opened), sum(resolved), sum(charged), sum(charged_cents), sum(floored), sum(floor_cents),
    sum(publisher_suspended) FROM stats_daily_holds GROUP BY day;

-- +goose StatementBegin
CREATE TRIGGER stats_network_chains_insert AFTER INSERT ON stats_daily_apps
WHEN NEW.side = 'advertiser' AND (NEW.chains <> 0 OR NEW.chains_fraud <> 0)
BEGIN
    INSERT INTO stats_daily_network_chains (day, shard, chains, chains_fraud) VALUES (NEW.day, 0, NEW.chains, NEW.chains_fraud)
    ON CONFLICT (day, shard) DO UPDATE SET chains = chains + excluded.chains, chains_fraud = chains_fraud + excluded.chains_fraud;
END;
-- +goose StatementEnd
-- An update adds its new figures less its old ones, to the old row's day
-- and then the new one's (the same day for every writer here).
-- +goose StatementBegin
CREATE TRIGGER stats_network_chains_update AFTER UPDATE ON stats_daily_apps
WHEN (NEW.side = 'advertiser' OR OLD.side = 'advertiser')
    AND (NEW.chains, NEW.chains_fraud, NEW.day, NEW.side) IS NOT (OLD.chains, OLD.chains_fraud, OLD.day, OLD.side)
BEGIN
    INSERT INTO stats_daily_network_chains (day, shard, chains, chains_fraud)
    SELECT OLD.day, 0, -OLD.chains, -OLD.chains_fraud WHERE OLD.side = 'advertiser'
    ON CONFLICT (day, shard) DO UPDATE SET chains = chains + excluded.chains, chains_fraud = chains_fraud + excluded.chains_fraud;
    INSERT INTO stats_daily_network_chains (day, shard, chains, chains_fraud)
    SELECT NEW.day, 0, NEW.chains, NEW.chains_fraud WHERE NEW.side = 'advertiser'
    ON CONFLICT (day, shard) DO UPDATE SET chains = chains + excluded.chains, chains_fraud = chains_fraud + excluded.chains_fraud;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER stats_network_holds_insert AFTER INSERT ON stats_daily_holds
BEGIN
    INSERT INTO stats_daily_network_holds (day, shard, opened, resolved, charged, charged_cents, floored, floor_cents,
        publisher_suspended)
    VALUES (NEW.day, 0, NEW.opened, NEW.resolved, NEW.charged, NEW.charged_cents, NEW.floored, NEW.floor_cents,
        NEW.publisher_suspended)
    ON CONFLICT (day, shard) DO UPDATE SET opened = opened + excluded.opened, resolved = resolved + excluded.resolved,
        charged = charged + excluded.charged, charged_cents = charged_cents + excluded.charged_cents,
        floored = floored + excluded.floored, floor_cents = floor_cents + excluded.floor_cents,
        publisher_suspended = publisher_suspended + excluded.publisher_suspended;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER stats_network_holds_update AFTER UPDATE ON stats_daily_holds
BEGIN
    INSERT INTO stats_daily_network_holds (day, shard, opened, resolved, charged, charged_cents, floored, floor_cents,
        publisher_suspended)
    VALUES (OLD.day, 0, -OLD.opened, -OLD.resolved, -OLD.charged, -OLD.charged_cents, -OLD.floored, -OLD.floor_cents,
        -OLD.publisher_suspended)
    ON CONFLICT (day, shard) DO UPDATE SET opened = opened + excluded.opened, resolved = resolved + excluded.resolved,
        charged = charged + excluded.charged, charged_cents = charged_cents + excluded.charged_cents,
        floored = floored + excluded.floored, floor_cents = floor_cents + excluded.floor_cents,
        publisher_suspended = publisher_suspended + excluded.publisher_suspended;
    INSERT INTO stats_daily_network_holds (day, shard, opened, resolved, charged, charged_cents, floored, floor_cents,
        publisher_suspended)
    VALUES (NEW.day, 0, NEW.opened, NEW.resolved, NEW.charged, NEW.charged_cents, NEW.floored, NEW.floor_cents,
        NEW.publisher_suspended)
    ON CONFLICT (day, shard) DO UPDATE SET opened = opened + excluded.opened, resolved = resolved + excluded.resolved,
        charged = charged + excluded.charged, charged_cents = charged_cents + excluded.charged_cents,
        floored = floored + excluded.floored, floor_cents = floor_cents + excluded.floor_cents,
        publisher_suspended = publisher_suspended + excluded.publisher_suspended;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER stats_network_holds_update;
DROP TRIGGER stats_network_holds_insert;
DROP TRIGGER stats_network_chains_update;
DROP TRIGGER stats_network_chains_insert;
DROP TABLE stats_daily_network_holds;
DROP TABLE stats_daily_network_chains;
