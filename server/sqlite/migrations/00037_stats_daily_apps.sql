-- +goose Up
-- stats_daily_apps: stats_daily summed over campaigns, one row per (app,
-- side, day), which the daily series without a campaign, the /stats figures
-- and the network's read (PostgreSQL's 00037: read its comments). Every
-- write of stats_daily goes through the stats_daily_add view (00032), so its
-- trigger adds the same figures to both tables in one statement's work.
-- SQLite has no 00036 (its triggers stayed per row): the numbers follow
-- PostgreSQL's.
CREATE TABLE stats_daily_apps (
    app_id       TEXT    NOT NULL,
    side         TEXT    NOT NULL CHECK (side IN ('advertiser', 'publisher')),
    day          INTEGER NOT NULL,
    fills        INTEGER NOT NULL DEFAULT 0,
    clicks       INTEGER NOT NULL DEFAULT 0,
    installs     INTEGER NOT NULL DEFAULT 0,
    activated    INTEGER NOT NULL DEFAULT 0,
    cleared      INTEGER NOT NULL DEFAULT 0,
    refunded     INTEGER NOT NULL DEFAULT 0,
    rejected     INTEGER NOT NULL DEFAULT 0,
    spend_cents  INTEGER NOT NULL DEFAULT 0,
    earned_cents INTEGER NOT NULL DEFAULT 0,
    chains       INTEGER NOT NULL DEFAULT 0,
    chains_fraud INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, side, day)
) STRICT, WITHOUT ROWID;
CREATE INDEX stats_daily_apps_network ON stats_daily_apps (day) WHERE side = 'advertiser';

INSERT INTO stats_daily_apps (app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected,
    spend_cents, earned_cents, chains, chains_fraud)
SELECT app_id, side, day, sum(fills), sum(clicks), sum(installs), sum(activated), sum(cleared), sum(refunded),
    sum(rejected), sum(spend_cents), sum(earned_cents), sum(chains), sum(chains_fraud)
FROM stats_daily GROUP BY app_id, side, day;

DROP TRIGGER stats_daily_add;
-- +goose StatementBegin
CREATE TRIGGER stats_daily_add INSTEAD OF INSERT ON stats_daily_add
BEGIN
    INSERT INTO stats_daily (app_id, side, day, campaign_id, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents, earned_cents, chains, chains_fraud)
    VALUES (NEW.app_id, NEW.side, NEW.day, NEW.campaign_id, coalesce(NEW.fills, 0), coalesce(NEW.clicks, 0), coalesce(NEW.installs, 0), coalesce(NEW.activated, 0), coalesce(NEW.cleared, 0), coalesce(NEW.refunded, 0), coalesce(NEW.rejected, 0), coalesce(NEW.spend_cents, 0), coalesce(NEW.earned_cents, 0), coalesce(NEW.chains, 0), coalesce(NEW.chains_fraud, 0))
    ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET
        fills = fills + excluded.fills,
        clicks = clicks + excluded.clicks,
        installs = installs + excluded.installs,
        activated = activated + excluded.activated,
        cleared = cleared + excluded.cleared,
        refunded = refunded + excluded.refunded,
        rejected = rejected + excluded.rejected,
        spend_cents = spend_cents + excluded.spend_cents,
        earned_cents = earned_cents + excluded.earned_cents,
        chains = chains + excluded.chains,
        chains_fraud = chains_fraud + excluded.chains_fraud;
    INSERT INTO stats_daily_apps (app_id, side, day, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents, earned_cents, chains, chains_fraud)
    VALUES (NEW.app_id, NEW.side, NEW.day, coalesce(NEW.fills, 0), coalesce(NEW.clicks, 0), coalesce(NEW.installs, 0), coalesce(NEW.activated, 0), coalesce(NEW.cleared, 0), coalesce(NEW.refunded, 0), coalesce(NEW.rejected, 0), coalesce(NEW.spend_cents, 0), coalesce(NEW.earned_cents, 0), coalesce(NEW.chains, 0), coalesce(NEW.chains_fraud, 0))
    ON CONFLICT (app_id, side, day) DO UPDATE SET
        fills = fills + excluded.fills,
        clicks = clicks + excluded.clicks,
        installs = installs + excluded.installs,
        activated = activated + excluded.activated,
        cleared = cleared + excluded.cleared,
        refunded = refunded + excluded.refunded,
        rejected = rejected + excluded.rejected,
        spend_cents = spend_cents + excluded.spend_cents,
        earned_cents = earned_cents + excluded.earned_cents,
        chains = chains + excluded.chains,
        chains_fraud = chains_fraud + excluded.chains_fraud;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER stats_daily_add;
-- +goose StatementBegin
CREATE TRIGGER stats_daily_add INSTEAD OF INSERT ON stats_daily_add
BEGIN
    INSERT INTO stats_daily (app_id, side, day, campaign_id, fills, clicks, installs, activated, cleared, refunded, rejected, spend_cents, earned_cents, chains, chains_fraud)
    VALUES (NEW.app_id, NEW.side, NEW.day, NEW.campaign_id, coalesce(NEW.fills, 0), coalesce(NEW.clicks, 0), coalesce(NEW.installs, 0), coalesce(NEW.activated, 0), coalesce(NEW.cleared, 0), coalesce(NEW.refunded, 0), coalesce(NEW.rejected, 0), coalesce(NEW.spend_cents, 0), coalesce(NEW.earned_cents, 0), coalesce(NEW.chains, 0), coalesce(NEW.chains_fraud, 0))
    ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET
        fills = fills + excluded.fills,
        clicks = clicks + excluded.clicks,
        installs = installs + excluded.installs,
        activated = activated + excluded.activated,
        cleared = cleared + excluded.cleared,
        refunded = refunded + excluded.refunded,
        rejected = rejected + excluded.rejected,
        spend_cents = spend_cents + excluded.spend_cents,
        earned_cents = earned_cents + excluded.earned_cents,
        chains = chains + excluded.chains,
        chains_fraud = chains_fraud + excluded.chains_fraud;
END;
-- +goose StatementEnd
DROP TABLE stats_daily_apps;
