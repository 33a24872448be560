-- +goose Up
-- Daily rollups of the facts the stats read (docs/stats.md), kept by
-- triggers in the transaction that changes each fact, as campaign_spend is
-- (00025). The tables and every figure are PostgreSQL's 00032 (read its
-- comments); here a day is the microseconds of its midnight UTC and "not
-- yet" is 0. server/storetest Rollups compares them with the raw facts.
CREATE TABLE stats_daily (
    app_id       TEXT    NOT NULL,
    side         TEXT    NOT NULL CHECK (side IN ('advertiser', 'publisher')),
    day          INTEGER NOT NULL,
    campaign_id  TEXT    NOT NULL,
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
    PRIMARY KEY (app_id, side, day, campaign_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX stats_daily_network ON stats_daily (day) WHERE side = 'advertiser';

CREATE TABLE stats_daily_rejections (
    app_id      TEXT    NOT NULL,
    day         INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    campaign_id TEXT    NOT NULL,
    chains      INTEGER NOT NULL,
    PRIMARY KEY (app_id, day, reason, campaign_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE stats_daily_categories (
    day           INTEGER NOT NULL,
    category      TEXT    NOT NULL,
    cleared       INTEGER NOT NULL,
    cleared_cents INTEGER NOT NULL,
    PRIMARY KEY (day, category)
) STRICT, WITHOUT ROWID;

CREATE TABLE stats_daily_holds (
    app_id              TEXT    NOT NULL,
    day                 INTEGER NOT NULL,
    opened              INTEGER NOT NULL DEFAULT 0,
    resolved            INTEGER NOT NULL DEFAULT 0,
    charged             INTEGER NOT NULL DEFAULT 0,
    charged_cents       INTEGER NOT NULL DEFAULT 0,
    floored             INTEGER NOT NULL DEFAULT 0,
    floor_cents         INTEGER NOT NULL DEFAULT 0,
    publisher_suspended INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, day)
) STRICT, WITHOUT ROWID;
CREATE INDEX stats_daily_holds_day ON stats_daily_holds (day);
CREATE INDEX escrow_holds_chain ON escrow_holds (chain_id) WHERE chain_id IS NOT NULL;

-- Triggers add to stats_daily through this view: an insert of some figures
-- (the others NULL, meaning 0) is added to the row of its key.
CREATE VIEW stats_daily_add AS SELECT * FROM stats_daily WHERE 0;

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

-- A new chain: every part it has.
-- +goose StatementBegin
CREATE TRIGGER chains_stats_insert AFTER INSERT ON chains
BEGIN
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, chains, clicks, chains_fraud) SELECT NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, (NEW.created_at - NEW.created_at % 86400000000), 1, CASE WHEN NEW.nonce IS NOT NULL THEN 1 ELSE 0 END, CASE WHEN (NEW.state = 'rejected' AND NEW.reason LIKE 'fraud\_%' ESCAPE '\') THEN 1 ELSE 0 END WHERE 1;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, clicks) SELECT NEW.publisher_app_id, 'publisher', NEW.campaign_id, (NEW.created_at - NEW.created_at % 86400000000), 1 WHERE NEW.publisher_app_id <> '' AND NEW.nonce IS NOT NULL;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, installs) SELECT NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, (NEW.installed_at - NEW.installed_at % 86400000000), 1 WHERE NEW.installed_at > 0;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, installs) SELECT NEW.publisher_app_id, 'publisher', NEW.campaign_id, (NEW.installed_at - NEW.installed_at % 86400000000), 1 WHERE NEW.installed_at > 0 AND NEW.publisher_app_id <> '';
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, activated) SELECT NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, (NEW.activated_at - NEW.activated_at % 86400000000), 1 WHERE NEW.activated_at > 0;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, cleared, refunded, rejected) SELECT NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, (NEW.resolved_at - NEW.resolved_at % 86400000000), CASE WHEN NEW.state = 'cleared' THEN 1 ELSE 0 END, CASE WHEN NEW.state = 'refunded' THEN 1 ELSE 0 END, CASE WHEN NEW.state = 'rejected' THEN 1 ELSE 0 END WHERE NEW.state IN ('cleared', 'refunded', 'rejected') AND NEW.resolved_at > 0;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, cleared) SELECT NEW.publisher_app_id, 'publisher', NEW.campaign_id, (NEW.resolved_at - NEW.resolved_at % 86400000000), 1 WHERE NEW.state = 'cleared' AND NEW.resolved_at > 0 AND NEW.publisher_app_id <> '';
    INSERT INTO stats_daily_categories (day, category, cleared, cleared_cents)
    SELECT (NEW.resolved_at - NEW.resolved_at % 86400000000), NEW.category, 1, 1 * NEW.price_cents WHERE NEW.state = 'cleared' AND NEW.resolved_at > 0
    ON CONFLICT (day, category) DO UPDATE SET cleared = cleared + excluded.cleared, cleared_cents = cleared_cents + excluded.cleared_cents;
    INSERT INTO stats_daily_rejections (app_id, day, reason, campaign_id, chains)
    SELECT NEW.advertiser_app_id, (NEW.resolved_at - NEW.resolved_at % 86400000000), NEW.reason, NEW.campaign_id, 1 WHERE NEW.state = 'rejected' AND NEW.resolved_at > 0
    ON CONFLICT (app_id, day, reason, campaign_id) DO UPDATE SET chains = chains + excluded.chains;
    INSERT INTO stats_daily_holds (app_id, day, publisher_suspended)
    SELECT h.advertiser_app_id, (h.created_at - h.created_at % 86400000000), 1 FROM escrow_holds h
    JOIN escrow_resolutions x ON x.hold_id = h.id AND x.resolution = 'release'
    WHERE h.chain_id = NEW.id AND NEW.state = 'refunded' AND NEW.reason = 'publisher_suspended'
    ON CONFLICT (app_id, day) DO UPDATE SET publisher_suspended = publisher_suspended + excluded.publisher_suspended;
END;
-- +goose StatementEnd

-- An update that moves the created part: out of its old rows, into its new ones.
-- +goose StatementBegin
CREATE TRIGGER chains_stats_created AFTER UPDATE ON chains
WHEN OLD.advertiser_app_id IS NOT NEW.advertiser_app_id OR OLD.publisher_app_id IS NOT NEW.publisher_app_id OR OLD.campaign_id IS NOT NEW.campaign_id OR (OLD.created_at - OLD.created_at % 86400000000) IS NOT (NEW.created_at - NEW.created_at % 86400000000) OR (OLD.nonce IS NOT NULL) IS NOT (NEW.nonce IS NOT NULL) OR (OLD.state = 'rejected' AND OLD.reason LIKE 'fraud\_%' ESCAPE '\') IS NOT (NEW.state = 'rejected' AND NEW.reason LIKE 'fraud\_%' ESCAPE '\')
BEGIN
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, chains, clicks, chains_fraud) SELECT OLD.advertiser_app_id, 'advertiser', OLD.campaign_id, (OLD.created_at - OLD.created_at % 86400000000), -1, CASE WHEN OLD.nonce IS NOT NULL THEN -1 ELSE 0 END, CASE WHEN (OLD.state = 'rejected' AND OLD.reason LIKE 'fraud\_%' ESCAPE '\') THEN -1 ELSE 0 END WHERE 1;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, clicks) SELECT OLD.publisher_app_id, 'publisher', OLD.campaign_id, (OLD.created_at - OLD.created_at % 86400000000), -1 WHERE OLD.publisher_app_id <> '' AND OLD.nonce IS NOT NULL;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, chains, clicks, chains_fraud) SELECT NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, (NEW.created_at - NEW.created_at % 86400000000), 1, CASE WHEN NEW.nonce IS NOT NULL THEN 1 ELSE 0 END, CASE WHEN (NEW.state = 'rejected' AND NEW.reason LIKE 'fraud\_%' ESCAPE '\') THEN 1 ELSE 0 END WHERE 1;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, clicks) SELECT NEW.publisher_app_id, 'publisher', NEW.campaign_id, (NEW.created_at - NEW.created_at % 86400000000), 1 WHERE NEW.publisher_app_id <> '' AND NEW.nonce IS NOT NULL;
END;
-- +goose StatementEnd

-- An update that moves the installed part: out of its old rows, into its new ones.
-- +goose StatementBegin
CREATE TRIGGER chains_stats_installed AFTER UPDATE ON chains
WHEN (OLD.installed_at > 0) IS NOT (NEW.installed_at > 0) OR OLD.advertiser_app_id IS NOT NEW.advertiser_app_id OR OLD.publisher_app_id IS NOT NEW.publisher_app_id OR OLD.campaign_id IS NOT NEW.campaign_id OR (OLD.installed_at - OLD.installed_at % 86400000000) IS NOT (NEW.installed_at - NEW.installed_at % 86400000000)
BEGIN
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, installs) SELECT OLD.advertiser_app_id, 'advertiser', OLD.campaign_id, (OLD.installed_at - OLD.installed_at % 86400000000), -1 WHERE OLD.installed_at > 0;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, installs) SELECT OLD.publisher_app_id, 'publisher', OLD.campaign_id, (OLD.installed_at - OLD.installed_at % 86400000000), -1 WHERE OLD.installed_at > 0 AND OLD.publisher_app_id <> '';
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, installs) SELECT NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, (NEW.installed_at - NEW.installed_at % 86400000000), 1 WHERE NEW.installed_at > 0;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, installs) SELECT NEW.publisher_app_id, 'publisher', NEW.campaign_id, (NEW.installed_at - NEW.installed_at % 86400000000), 1 WHERE NEW.installed_at > 0 AND NEW.publisher_app_id <> '';
END;
-- +goose StatementEnd

-- An update that moves the activated part: out of its old rows, into its new ones.
-- +goose StatementBegin
CREATE TRIGGER chains_stats_activated AFTER UPDATE ON chains
WHEN (OLD.activated_at > 0) IS NOT (NEW.activated_at > 0) OR OLD.advertiser_app_id IS NOT NEW.advertiser_app_id OR OLD.campaign_id IS NOT NEW.campaign_id OR (OLD.activated_at - OLD.activated_at % 86400000000) IS NOT (NEW.activated_at - NEW.activated_at % 86400000000)
BEGIN
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, activated) SELECT OLD.advertiser_app_id, 'advertiser', OLD.campaign_id, (OLD.activated_at - OLD.activated_at % 86400000000), -1 WHERE OLD.activated_at > 0;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, activated) SELECT NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, (NEW.activated_at - NEW.activated_at % 86400000000), 1 WHERE NEW.activated_at > 0;
END;
-- +goose StatementEnd

-- An update that moves the resolved part: out of its old rows, into its new ones.
-- +goose StatementBegin
CREATE TRIGGER chains_stats_resolved AFTER UPDATE ON chains
WHEN (OLD.state IN ('cleared', 'refunded', 'rejected') AND OLD.resolved_at > 0) IS NOT (NEW.state IN ('cleared', 'refunded', 'rejected') AND NEW.resolved_at > 0) OR OLD.advertiser_app_id IS NOT NEW.advertiser_app_id OR OLD.publisher_app_id IS NOT NEW.publisher_app_id OR OLD.campaign_id IS NOT NEW.campaign_id OR (OLD.resolved_at - OLD.resolved_at % 86400000000) IS NOT (NEW.resolved_at - NEW.resolved_at % 86400000000) OR OLD.state IS NOT NEW.state OR OLD.reason IS NOT NEW.reason OR OLD.category IS NOT NEW.category OR OLD.price_cents IS NOT NEW.price_cents
BEGIN
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, cleared, refunded, rejected) SELECT OLD.advertiser_app_id, 'advertiser', OLD.campaign_id, (OLD.resolved_at - OLD.resolved_at % 86400000000), CASE WHEN OLD.state = 'cleared' THEN -1 ELSE 0 END, CASE WHEN OLD.state = 'refunded' THEN -1 ELSE 0 END, CASE WHEN OLD.state = 'rejected' THEN -1 ELSE 0 END WHERE OLD.state IN ('cleared', 'refunded', 'rejected') AND OLD.resolved_at > 0;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, cleared) SELECT OLD.publisher_app_id, 'publisher', OLD.campaign_id, (OLD.resolved_at - OLD.resolved_at % 86400000000), -1 WHERE OLD.state = 'cleared' AND OLD.resolved_at > 0 AND OLD.publisher_app_id <> '';
    INSERT INTO stats_daily_categories (day, category, cleared, cleared_cents)
    SELECT (OLD.resolved_at - OLD.resolved_at % 86400000000), OLD.category, -1, -1 * OLD.price_cents WHERE OLD.state = 'cleared' AND OLD.resolved_at > 0
    ON CONFLICT (day, category) DO UPDATE SET cleared = cleared + excluded.cleared, cleared_cents = cleared_cents + excluded.cleared_cents;
    INSERT INTO stats_daily_rejections (app_id, day, reason, campaign_id, chains)
    SELECT OLD.advertiser_app_id, (OLD.resolved_at - OLD.resolved_at % 86400000000), OLD.reason, OLD.campaign_id, -1 WHERE OLD.state = 'rejected' AND OLD.resolved_at > 0
    ON CONFLICT (app_id, day, reason, campaign_id) DO UPDATE SET chains = chains + excluded.chains;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, cleared, refunded, rejected) SELECT NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, (NEW.resolved_at - NEW.resolved_at % 86400000000), CASE WHEN NEW.state = 'cleared' THEN 1 ELSE 0 END, CASE WHEN NEW.state = 'refunded' THEN 1 ELSE 0 END, CASE WHEN NEW.state = 'rejected' THEN 1 ELSE 0 END WHERE NEW.state IN ('cleared', 'refunded', 'rejected') AND NEW.resolved_at > 0;
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, cleared) SELECT NEW.publisher_app_id, 'publisher', NEW.campaign_id, (NEW.resolved_at - NEW.resolved_at % 86400000000), 1 WHERE NEW.state = 'cleared' AND NEW.resolved_at > 0 AND NEW.publisher_app_id <> '';
    INSERT INTO stats_daily_categories (day, category, cleared, cleared_cents)
    SELECT (NEW.resolved_at - NEW.resolved_at % 86400000000), NEW.category, 1, 1 * NEW.price_cents WHERE NEW.state = 'cleared' AND NEW.resolved_at > 0
    ON CONFLICT (day, category) DO UPDATE SET cleared = cleared + excluded.cleared, cleared_cents = cleared_cents + excluded.cleared_cents;
    INSERT INTO stats_daily_rejections (app_id, day, reason, campaign_id, chains)
    SELECT NEW.advertiser_app_id, (NEW.resolved_at - NEW.resolved_at % 86400000000), NEW.reason, NEW.campaign_id, 1 WHERE NEW.state = 'rejected' AND NEW.resolved_at > 0
    ON CONFLICT (app_id, day, reason, campaign_id) DO UPDATE SET chains = chains + excluded.chains;
END;
-- +goose StatementEnd

-- An update that moves the suspended part: out of its old rows, into its new ones.
-- +goose StatementBegin
CREATE TRIGGER chains_stats_suspended AFTER UPDATE ON chains
WHEN (OLD.state = 'refunded' AND OLD.reason = 'publisher_suspended') IS NOT (NEW.state = 'refunded' AND NEW.reason = 'publisher_suspended') OR OLD.id IS NOT NEW.id
BEGIN
    INSERT INTO stats_daily_holds (app_id, day, publisher_suspended)
    SELECT h.advertiser_app_id, (h.created_at - h.created_at % 86400000000), -1 FROM escrow_holds h
    JOIN escrow_resolutions x ON x.hold_id = h.id AND x.resolution = 'release'
    WHERE h.chain_id = OLD.id AND OLD.state = 'refunded' AND OLD.reason = 'publisher_suspended'
    ON CONFLICT (app_id, day) DO UPDATE SET publisher_suspended = publisher_suspended + excluded.publisher_suspended;
    INSERT INTO stats_daily_holds (app_id, day, publisher_suspended)
    SELECT h.advertiser_app_id, (h.created_at - h.created_at % 86400000000), 1 FROM escrow_holds h
    JOIN escrow_resolutions x ON x.hold_id = h.id AND x.resolution = 'release'
    WHERE h.chain_id = NEW.id AND NEW.state = 'refunded' AND NEW.reason = 'publisher_suspended'
    ON CONFLICT (app_id, day) DO UPDATE SET publisher_suspended = publisher_suspended + excluded.publisher_suspended;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER fill_counts_stats_insert AFTER INSERT ON fill_counts
BEGIN
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, fills) VALUES (NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, NEW.day, NEW.count);
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, fills) VALUES (NEW.publisher_app_id, 'publisher', NEW.campaign_id, NEW.day, NEW.count);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER fill_counts_stats_update AFTER UPDATE ON fill_counts
BEGIN
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, fills) VALUES (OLD.advertiser_app_id, 'advertiser', OLD.campaign_id, OLD.day, -OLD.count);
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, fills) VALUES (OLD.publisher_app_id, 'publisher', OLD.campaign_id, OLD.day, -OLD.count);
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, fills) VALUES (NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, NEW.day, NEW.count);
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, fills) VALUES (NEW.publisher_app_id, 'publisher', NEW.campaign_id, NEW.day, NEW.count);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER escrow_holds_stats AFTER INSERT ON escrow_holds
BEGIN
    INSERT INTO stats_daily_holds (app_id, day, opened) VALUES (NEW.advertiser_app_id, NEW.created_at - NEW.created_at % 86400000000, 1)
    ON CONFLICT (app_id, day) DO UPDATE SET opened = opened + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER escrow_resolutions_stats AFTER INSERT ON escrow_resolutions
BEGIN
    INSERT INTO stats_daily_holds (app_id, day, resolved, charged, charged_cents, floored, floor_cents, publisher_suspended)
    SELECT app_id, t - t % 86400000000, 1,
        NEW.resolution = 'charge', CASE WHEN NEW.resolution = 'charge' THEN amount ELSE 0 END,
        NEW.resolution = 'charge' AND f IS NOT NULL, CASE WHEN NEW.resolution = 'charge' THEN coalesce(f, 0) ELSE 0 END,
        NEW.resolution = 'release' AND reason IS 'publisher_suspended'
    FROM (SELECT h.advertiser_app_id AS app_id, h.created_at AS t, h.amount AS amount, c.reason AS reason,
            (SELECT cf.floor_cents FROM category_floors cf WHERE cf.category = c.category AND cf.platform = c.platform
             ORDER BY CASE WHEN cf.at <= c.offered_at THEN cf.version ELSE -cf.version END DESC LIMIT 1) AS f
          FROM escrow_holds h LEFT JOIN chains c ON c.id = h.chain_id WHERE h.id = NEW.hold_id)
    WHERE true
    ON CONFLICT (app_id, day) DO UPDATE SET resolved = resolved + excluded.resolved, charged = charged + excluded.charged,
        charged_cents = charged_cents + excluded.charged_cents, floored = floored + excluded.floored,
        floor_cents = floor_cents + excluded.floor_cents, publisher_suspended = publisher_suspended + excluded.publisher_suspended;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER ledger_lines_stats AFTER INSERT ON ledger_lines
WHEN NEW.type IN ('charge', 'earn', 'clawback') AND NEW.chain_id IS NOT NULL AND NEW.account_id LIKE 'wallet:%'
BEGIN
    INSERT INTO stats_daily_add (app_id, side, campaign_id, day, spend_cents, earned_cents)
    VALUES (substr(NEW.account_id, 8), CASE WHEN NEW.type = 'charge' THEN 'advertiser' ELSE 'publisher' END,
        coalesce((SELECT campaign_id FROM chains WHERE id = NEW.chain_id), ''), NEW.created_at - NEW.created_at % 86400000000,
        CASE WHEN NEW.type = 'charge' THEN -NEW.amount ELSE 0 END, CASE WHEN NEW.type = 'charge' THEN 0 ELSE NEW.amount END);
END;
-- +goose StatementEnd

-- The history so far, rolled up once, part by part.
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, chains, clicks, chains_fraud)
SELECT advertiser_app_id, 'advertiser', campaign_id, created_at - created_at % 86400000000, count(*), count(nonce),
    sum(state = 'rejected' AND reason LIKE 'fraud\_%' ESCAPE '\') FROM chains GROUP BY 1, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, clicks)
SELECT publisher_app_id, 'publisher', campaign_id, created_at - created_at % 86400000000, count(*) FROM chains
WHERE publisher_app_id <> '' AND nonce IS NOT NULL GROUP BY 1, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, installs)
SELECT advertiser_app_id, 'advertiser', campaign_id, installed_at - installed_at % 86400000000, count(*) FROM chains
WHERE installed_at > 0 GROUP BY 1, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, installs)
SELECT publisher_app_id, 'publisher', campaign_id, installed_at - installed_at % 86400000000, count(*) FROM chains
WHERE installed_at > 0 AND publisher_app_id <> '' GROUP BY 1, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, activated)
SELECT advertiser_app_id, 'advertiser', campaign_id, activated_at - activated_at % 86400000000, count(*) FROM chains
WHERE activated_at > 0 GROUP BY 1, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, cleared, refunded, rejected)
SELECT advertiser_app_id, 'advertiser', campaign_id, resolved_at - resolved_at % 86400000000,
    sum(state = 'cleared'), sum(state = 'refunded'), sum(state = 'rejected') FROM chains
WHERE state IN ('cleared', 'refunded', 'rejected') AND resolved_at > 0 GROUP BY 1, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, cleared)
SELECT publisher_app_id, 'publisher', campaign_id, resolved_at - resolved_at % 86400000000, count(*) FROM chains
WHERE state = 'cleared' AND resolved_at > 0 AND publisher_app_id <> '' GROUP BY 1, 3, 4;
INSERT INTO stats_daily_categories (day, category, cleared, cleared_cents)
SELECT resolved_at - resolved_at % 86400000000, category, count(*), sum(price_cents) FROM chains
WHERE state = 'cleared' AND resolved_at > 0 GROUP BY 1, 2;
INSERT INTO stats_daily_rejections (app_id, day, reason, campaign_id, chains)
SELECT advertiser_app_id, resolved_at - resolved_at % 86400000000, reason, campaign_id, count(*) FROM chains
WHERE state = 'rejected' AND resolved_at > 0 GROUP BY 1, 2, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, fills)
SELECT advertiser_app_id, 'advertiser', campaign_id, day, sum(count) FROM fill_counts GROUP BY 1, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, fills)
SELECT publisher_app_id, 'publisher', campaign_id, day, sum(count) FROM fill_counts GROUP BY 1, 3, 4;
INSERT INTO stats_daily_add (app_id, side, campaign_id, day, spend_cents, earned_cents)
SELECT substr(l.account_id, 8), CASE WHEN l.type = 'charge' THEN 'advertiser' ELSE 'publisher' END, coalesce(c.campaign_id, ''),
    l.created_at - l.created_at % 86400000000,
    coalesce(-sum(l.amount) FILTER (WHERE l.type = 'charge'), 0), coalesce(sum(l.amount) FILTER (WHERE l.type <> 'charge'), 0)
FROM ledger_lines l LEFT JOIN chains c ON c.id = l.chain_id
WHERE l.type IN ('charge', 'earn', 'clawback') AND l.chain_id IS NOT NULL AND l.account_id LIKE 'wallet:%'
GROUP BY 1, 2, 3, 4;
INSERT INTO stats_daily_holds (app_id, day, opened, resolved, charged, charged_cents, floored, floor_cents, publisher_suspended)
SELECT h.advertiser_app_id, h.created_at - h.created_at % 86400000000, count(*), count(r.hold_id),
  count(*) FILTER (WHERE r.resolution = 'charge'),
  coalesce(sum(h.amount) FILTER (WHERE r.resolution = 'charge'), 0),
  count(f) FILTER (WHERE r.resolution = 'charge'),
  coalesce(sum(f) FILTER (WHERE r.resolution = 'charge'), 0),
  count(*) FILTER (WHERE r.resolution = 'release' AND c.reason = 'publisher_suspended')
FROM (SELECT h.*, (SELECT cf.floor_cents FROM category_floors cf WHERE cf.category = c.category AND cf.platform = c.platform
        ORDER BY CASE WHEN cf.at <= c.offered_at THEN cf.version ELSE -cf.version END DESC LIMIT 1) AS f
      FROM escrow_holds h LEFT JOIN chains c ON c.id = h.chain_id) h
LEFT JOIN escrow_resolutions r ON r.hold_id = h.id
LEFT JOIN chains c ON c.id = h.chain_id
GROUP BY 1, 2;

-- +goose Down
DROP TRIGGER ledger_lines_stats;
DROP TRIGGER escrow_resolutions_stats;
DROP TRIGGER escrow_holds_stats;
DROP TRIGGER fill_counts_stats_update;
DROP TRIGGER fill_counts_stats_insert;
DROP TRIGGER chains_stats_suspended;
DROP TRIGGER chains_stats_resolved;
DROP TRIGGER chains_stats_activated;
DROP TRIGGER chains_stats_installed;
DROP TRIGGER chains_stats_created;
DROP TRIGGER chains_stats_insert;
DROP TRIGGER stats_daily_add;
DROP VIEW stats_daily_add;
DROP INDEX escrow_holds_chain;
DROP TABLE stats_daily_holds;
DROP TABLE stats_daily_categories;
DROP TABLE stats_daily_rejections;
DROP TABLE stats_daily;
