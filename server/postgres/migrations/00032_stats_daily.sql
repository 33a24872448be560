-- +goose Up
-- Daily rollups of the facts the stats read (docs/stats.md), kept by
-- triggers in the transaction that changes each fact, as campaign_spend is
-- (00025): every writer of chains, fill counts, escrow holds, resolutions
-- and ledger lines keeps them exact without knowing of them, and a read of
-- a year of history reads one row per day instead of scanning the facts.
-- Days are UTC. Each figure is, at every commit, exactly the count (or sum)
-- its comment names; server/storetest Rollups compares them with the raw
-- facts after random operations.

-- One row per (app, side, UTC day, campaign). campaign_id is '' for facts
-- without a campaign (refusal records, ledger lines of a chain not stored).
-- The advertiser side (app = the chain's advertiser_app_id, or the wallet's
-- owner for money):
--   fills        fill_counts.count of the day (the campaign's creatives served)
--   clicks       chains with a nonce, by created_at
--   installs     chains by installed_at
--   activated    chains by activated_at
--   cleared, refunded, rejected   chains in that state, by resolved_at
--   spend_cents  −amount of the wallet's `charge` lines of a chain, by created_at
--   chains       every chain by created_at (refusal records included)
--   chains_fraud of those, the ones now rejected by a fraud rule (fraud_*)
-- The publisher side (app = the chain's publisher_app_id): fills (served),
-- clicks, installs and cleared as above, and earned_cents: the amount of the
-- wallet's `earn` and `clawback` lines of a chain (net of clawbacks), by
-- created_at.
CREATE TABLE stats_daily (
    app_id       text COLLATE "C" NOT NULL,
    side         text COLLATE "C" NOT NULL CHECK (side IN ('advertiser', 'publisher')),
    day          date             NOT NULL,
    campaign_id  text COLLATE "C" NOT NULL,
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
    PRIMARY KEY (app_id, side, day, campaign_id)
) WITH (fillfactor = 80);
-- The network's figures sum every app's advertiser rows of a window.
CREATE INDEX stats_daily_network ON stats_daily (day) WHERE side = 'advertiser';

-- An advertiser's rejected chains by resolved_at day, campaign and reason
-- (the stats' fraud_rejected).
CREATE TABLE stats_daily_rejections (
    app_id      text COLLATE "C" NOT NULL,
    day         date             NOT NULL,
    reason      text COLLATE "C" NOT NULL,
    campaign_id text COLLATE "C" NOT NULL,
    chains      bigint           NOT NULL,
    PRIMARY KEY (app_id, day, reason, campaign_id)
);

-- Cleared chains by resolved_at day and category: count and sum of
-- price_cents (the network's avg_cpi_by_category). Only the sweep clears.
CREATE TABLE stats_daily_categories (
    day           date             NOT NULL,
    category      text COLLATE "C" NOT NULL,
    cleared       bigint           NOT NULL,
    cleared_cents bigint           NOT NULL,
    PRIMARY KEY (day, category)
);

-- Escrow holds by the UTC day they were opened (created_at) and advertiser,
-- with what became of them so far: the market's HoldStats of the holds
-- opened that day (holdStats in market.go), each figure the same filter.
-- floored/floor_cents: the charged holds whose chain's offer had a floor,
-- and the sum of those floors (the version in force at the offer, else the
-- first), fixed when the hold is charged.
CREATE TABLE stats_daily_holds (
    app_id              text COLLATE "C" NOT NULL,
    day                 date             NOT NULL,
    opened              bigint           NOT NULL DEFAULT 0,
    resolved            bigint           NOT NULL DEFAULT 0,
    charged             bigint           NOT NULL DEFAULT 0,
    charged_cents       bigint           NOT NULL DEFAULT 0,
    floored             bigint           NOT NULL DEFAULT 0,
    floor_cents         bigint           NOT NULL DEFAULT 0,
    publisher_suspended bigint           NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, day)
);
CREATE INDEX stats_daily_holds_day ON stats_daily_holds (day);
-- A chain refunded publisher_suspended finds its released hold.
CREATE INDEX escrow_holds_chain ON escrow_holds (chain_id) WHERE chain_id IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION stats_add(p_app text, p_side text, p_campaign text, p_day date,
    p_fills bigint DEFAULT 0, p_clicks bigint DEFAULT 0, p_installs bigint DEFAULT 0, p_activated bigint DEFAULT 0,
    p_cleared bigint DEFAULT 0, p_refunded bigint DEFAULT 0, p_rejected bigint DEFAULT 0, p_spend bigint DEFAULT 0,
    p_earned bigint DEFAULT 0, p_chains bigint DEFAULT 0, p_fraud bigint DEFAULT 0) RETURNS void LANGUAGE sql AS $$
INSERT INTO stats_daily (app_id, side, campaign_id, day, fills, clicks, installs, activated, cleared, refunded, rejected,
    spend_cents, earned_cents, chains, chains_fraud)
VALUES (p_app, p_side, p_campaign, p_day, p_fills, p_clicks, p_installs, p_activated, p_cleared, p_refunded, p_rejected,
    p_spend, p_earned, p_chains, p_fraud)
ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET
    fills = stats_daily.fills + excluded.fills, clicks = stats_daily.clicks + excluded.clicks,
    installs = stats_daily.installs + excluded.installs, activated = stats_daily.activated + excluded.activated,
    cleared = stats_daily.cleared + excluded.cleared, refunded = stats_daily.refunded + excluded.refunded,
    rejected = stats_daily.rejected + excluded.rejected, spend_cents = stats_daily.spend_cents + excluded.spend_cents,
    earned_cents = stats_daily.earned_cents + excluded.earned_cents, chains = stats_daily.chains + excluded.chains,
    chains_fraud = stats_daily.chains_fraud + excluded.chains_fraud
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_utc_day(t timestamptz) RETURNS date LANGUAGE sql IMMUTABLE AS $$ SELECT (t AT TIME ZONE 'UTC')::date $$;
-- +goose StatementEnd

-- A chain's facts come in five parts, each with its own day. stats_chain_part
-- is what part p of chain r contributes (its key and figures, as text), NULL
-- when it contributes nothing; an update moves a part only when that text
-- changes, so a heartbeat or a clear touches one or two rows, not all.
-- +goose StatementBegin
CREATE FUNCTION stats_chain_part(r chains, p int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT CASE p
    WHEN 1 THEN concat_ws('|', r.advertiser_app_id, r.publisher_app_id, r.campaign_id, stats_utc_day(r.created_at),
        r.nonce IS NOT NULL, r.state = 'rejected' AND r.reason LIKE 'fraud\_%')
    WHEN 2 THEN CASE WHEN r.installed_at IS NOT NULL THEN
        concat_ws('|', r.advertiser_app_id, r.publisher_app_id, r.campaign_id, stats_utc_day(r.installed_at)) END
    WHEN 3 THEN CASE WHEN r.activated_at IS NOT NULL THEN
        concat_ws('|', r.advertiser_app_id, r.campaign_id, stats_utc_day(r.activated_at)) END
    WHEN 4 THEN CASE WHEN r.state IN ('cleared', 'refunded', 'rejected') AND r.resolved_at IS NOT NULL THEN
        concat_ws('|', r.advertiser_app_id, r.publisher_app_id, r.campaign_id, stats_utc_day(r.resolved_at), r.state,
            r.reason, r.category, r.price_cents) END
    WHEN 5 THEN CASE WHEN r.state = 'refunded' AND r.reason = 'publisher_suspended' THEN r.id END
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_chain_apply(r chains, p int, s bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    d date;
BEGIN
    IF p = 1 THEN
        d := stats_utc_day(r.created_at);
        PERFORM stats_add(r.advertiser_app_id, 'advertiser', r.campaign_id, d, p_chains => s,
            p_clicks => CASE WHEN r.nonce IS NOT NULL THEN s ELSE 0 END,
            p_fraud => CASE WHEN r.state = 'rejected' AND r.reason LIKE 'fraud\_%' THEN s ELSE 0 END);
        IF r.publisher_app_id <> '' AND r.nonce IS NOT NULL THEN
            PERFORM stats_add(r.publisher_app_id, 'publisher', r.campaign_id, d, p_clicks => s);
        END IF;
    ELSIF p = 2 THEN
        d := stats_utc_day(r.installed_at);
        PERFORM stats_add(r.advertiser_app_id, 'advertiser', r.campaign_id, d, p_installs => s);
        IF r.publisher_app_id <> '' THEN
            PERFORM stats_add(r.publisher_app_id, 'publisher', r.campaign_id, d, p_installs => s);
        END IF;
    ELSIF p = 3 THEN
        PERFORM stats_add(r.advertiser_app_id, 'advertiser', r.campaign_id, stats_utc_day(r.activated_at), p_activated => s);
    ELSIF p = 4 THEN
        d := stats_utc_day(r.resolved_at);
        PERFORM stats_add(r.advertiser_app_id, 'advertiser', r.campaign_id, d,
            p_cleared => CASE WHEN r.state = 'cleared' THEN s ELSE 0 END,
            p_refunded => CASE WHEN r.state = 'refunded' THEN s ELSE 0 END,
            p_rejected => CASE WHEN r.state = 'rejected' THEN s ELSE 0 END);
        IF r.state = 'cleared' THEN
            IF r.publisher_app_id <> '' THEN
                PERFORM stats_add(r.publisher_app_id, 'publisher', r.campaign_id, d, p_cleared => s);
            END IF;
            INSERT INTO stats_daily_categories (day, category, cleared, cleared_cents) VALUES (d, r.category, s, s * r.price_cents)
            ON CONFLICT (day, category) DO UPDATE SET cleared = stats_daily_categories.cleared + excluded.cleared,
                cleared_cents = stats_daily_categories.cleared_cents + excluded.cleared_cents;
        ELSIF r.state = 'rejected' THEN
            INSERT INTO stats_daily_rejections (app_id, day, reason, campaign_id, chains) VALUES (r.advertiser_app_id, d, r.reason, r.campaign_id, s)
            ON CONFLICT (app_id, day, reason, campaign_id) DO UPDATE SET chains = stats_daily_rejections.chains + excluded.chains;
        END IF;
    ELSIF p = 5 THEN
        -- The hold of a chain refunded publisher_suspended, when its release
        -- is already written (otherwise the release's trigger counts it).
        INSERT INTO stats_daily_holds (app_id, day, publisher_suspended)
        SELECT h.advertiser_app_id, stats_utc_day(h.created_at), s FROM escrow_holds h
        JOIN escrow_resolutions x ON x.hold_id = h.id AND x.resolution = 'release' WHERE h.chain_id = r.id
        ON CONFLICT (app_id, day) DO UPDATE SET publisher_suspended = stats_daily_holds.publisher_suspended + excluded.publisher_suspended;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_chains() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    FOR p IN 1..5 LOOP
        IF TG_OP = 'INSERT' THEN
            IF stats_chain_part(NEW, p) IS NOT NULL THEN
                PERFORM stats_chain_apply(NEW, p, 1);
            END IF;
        ELSIF stats_chain_part(OLD, p) IS DISTINCT FROM stats_chain_part(NEW, p) THEN
            IF stats_chain_part(OLD, p) IS NOT NULL THEN
                PERFORM stats_chain_apply(OLD, p, -1);
            END IF;
            IF stats_chain_part(NEW, p) IS NOT NULL THEN
                PERFORM stats_chain_apply(NEW, p, 1);
            END IF;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_fill_counts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        before := OLD.count;
    END IF;
    -- A flush adds to a row's count (ON CONFLICT DO UPDATE): the difference
    -- goes to the rollup; an update that moved a row takes all of it along.
    IF TG_OP = 'UPDATE' AND (OLD.day, OLD.campaign_id, OLD.advertiser_app_id, OLD.publisher_app_id)
        IS DISTINCT FROM (NEW.day, NEW.campaign_id, NEW.advertiser_app_id, NEW.publisher_app_id) THEN
        PERFORM stats_add(OLD.advertiser_app_id, 'advertiser', OLD.campaign_id, OLD.day, p_fills => -OLD.count);
        PERFORM stats_add(OLD.publisher_app_id, 'publisher', OLD.campaign_id, OLD.day, p_fills => -OLD.count);
        PERFORM stats_add(NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, NEW.day, p_fills => NEW.count);
        PERFORM stats_add(NEW.publisher_app_id, 'publisher', NEW.campaign_id, NEW.day, p_fills => NEW.count);
    ELSIF NEW.count <> before THEN
        PERFORM stats_add(NEW.advertiser_app_id, 'advertiser', NEW.campaign_id, NEW.day, p_fills => NEW.count - before);
        PERFORM stats_add(NEW.publisher_app_id, 'publisher', NEW.campaign_id, NEW.day, p_fills => NEW.count - before);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_escrow_holds() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stats_daily_holds (app_id, day, opened) VALUES (NEW.advertiser_app_id, stats_utc_day(NEW.created_at), 1)
    ON CONFLICT (app_id, day) DO UPDATE SET opened = stats_daily_holds.opened + 1;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_escrow_resolutions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stats_daily_holds (app_id, day, resolved, charged, charged_cents, floored, floor_cents, publisher_suspended)
    SELECT h.advertiser_app_id, stats_utc_day(h.created_at), 1,
        (NEW.resolution = 'charge')::int, CASE WHEN NEW.resolution = 'charge' THEN h.amount ELSE 0 END,
        (NEW.resolution = 'charge' AND f.floor_cents IS NOT NULL)::int,
        CASE WHEN NEW.resolution = 'charge' THEN coalesce(f.floor_cents, 0) ELSE 0 END,
        (NEW.resolution = 'release' AND c.reason IS NOT DISTINCT FROM 'publisher_suspended')::int
    FROM escrow_holds h LEFT JOIN chains c ON c.id = h.chain_id
    LEFT JOIN LATERAL (SELECT cf.floor_cents FROM category_floors cf WHERE cf.category = c.category AND cf.platform = c.platform
        ORDER BY CASE WHEN cf.at <= c.offered_at THEN cf.version ELSE -cf.version END DESC LIMIT 1) f ON true
    WHERE h.id = NEW.hold_id
    ON CONFLICT (app_id, day) DO UPDATE SET resolved = stats_daily_holds.resolved + excluded.resolved,
        charged = stats_daily_holds.charged + excluded.charged, charged_cents = stats_daily_holds.charged_cents + excluded.charged_cents,
        floored = stats_daily_holds.floored + excluded.floored, floor_cents = stats_daily_holds.floor_cents + excluded.floor_cents,
        publisher_suspended = stats_daily_holds.publisher_suspended + excluded.publisher_suspended;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_ledger_lines() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cmp text := coalesce((SELECT campaign_id FROM chains WHERE id = NEW.chain_id), '');
BEGIN
    IF NEW.type = 'charge' THEN
        PERFORM stats_add(substr(NEW.account_id, 8), 'advertiser', cmp, stats_utc_day(NEW.created_at), p_spend => -NEW.amount);
    ELSE
        PERFORM stats_add(substr(NEW.account_id, 8), 'publisher', cmp, stats_utc_day(NEW.created_at), p_earned => NEW.amount);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER chains_stats_insert AFTER INSERT ON chains FOR EACH ROW EXECUTE FUNCTION stats_chains();
CREATE TRIGGER chains_stats_update AFTER UPDATE ON chains FOR EACH ROW
WHEN ((OLD.state, OLD.reason, OLD.nonce, OLD.campaign_id, OLD.advertiser_app_id, OLD.publisher_app_id, OLD.category,
       OLD.price_cents, OLD.created_at, OLD.installed_at, OLD.activated_at, OLD.resolved_at)
      IS DISTINCT FROM (NEW.state, NEW.reason, NEW.nonce, NEW.campaign_id, NEW.advertiser_app_id, NEW.publisher_app_id, NEW.category,
       NEW.price_cents, NEW.created_at, NEW.installed_at, NEW.activated_at, NEW.resolved_at))
EXECUTE FUNCTION stats_chains();
CREATE TRIGGER fill_counts_stats AFTER INSERT OR UPDATE ON fill_counts FOR EACH ROW EXECUTE FUNCTION stats_fill_counts();
CREATE TRIGGER escrow_holds_stats AFTER INSERT ON escrow_holds FOR EACH ROW EXECUTE FUNCTION stats_escrow_holds();
CREATE TRIGGER escrow_resolutions_stats AFTER INSERT ON escrow_resolutions FOR EACH ROW EXECUTE FUNCTION stats_escrow_resolutions();
CREATE TRIGGER ledger_lines_stats AFTER INSERT ON ledger_lines FOR EACH ROW
WHEN (NEW.type IN ('charge', 'earn', 'clawback') AND NEW.chain_id IS NOT NULL AND NEW.account_id LIKE 'wallet:%')
EXECUTE FUNCTION stats_ledger_lines();
-- Also under session_replication_role = replica: the rollups follow every write.
ALTER TABLE chains ENABLE ALWAYS TRIGGER chains_stats_insert;
ALTER TABLE chains ENABLE ALWAYS TRIGGER chains_stats_update;
ALTER TABLE fill_counts ENABLE ALWAYS TRIGGER fill_counts_stats;
ALTER TABLE escrow_holds ENABLE ALWAYS TRIGGER escrow_holds_stats;
ALTER TABLE escrow_resolutions ENABLE ALWAYS TRIGGER escrow_resolutions_stats;
ALTER TABLE ledger_lines ENABLE ALWAYS TRIGGER ledger_lines_stats;

-- The history so far, rolled up once.
-- +goose StatementBegin
DO $$
DECLARE
    r chains;
BEGIN
    FOR r IN SELECT * FROM chains LOOP
        FOR p IN 1..4 LOOP
            IF stats_chain_part(r, p) IS NOT NULL THEN
                PERFORM stats_chain_apply(r, p, 1);
            END IF;
        END LOOP;
    END LOOP;
END
$$;
-- +goose StatementEnd
INSERT INTO stats_daily (app_id, side, campaign_id, day, fills)
SELECT advertiser_app_id, 'advertiser', campaign_id, day, sum(count) FROM fill_counts GROUP BY 1, 3, 4
ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET fills = stats_daily.fills + excluded.fills;
INSERT INTO stats_daily (app_id, side, campaign_id, day, fills)
SELECT publisher_app_id, 'publisher', campaign_id, day, sum(count) FROM fill_counts GROUP BY 1, 3, 4
ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET fills = stats_daily.fills + excluded.fills;
INSERT INTO stats_daily (app_id, side, campaign_id, day, spend_cents, earned_cents)
SELECT substr(l.account_id, 8), CASE WHEN l.type = 'charge' THEN 'advertiser' ELSE 'publisher' END, coalesce(c.campaign_id, ''),
    stats_utc_day(l.created_at), coalesce(-sum(l.amount) FILTER (WHERE l.type = 'charge'), 0), coalesce(sum(l.amount) FILTER (WHERE l.type <> 'charge'), 0)
FROM ledger_lines l LEFT JOIN chains c ON c.id = l.chain_id
WHERE l.type IN ('charge', 'earn', 'clawback') AND l.chain_id IS NOT NULL AND l.account_id LIKE 'wallet:%'
GROUP BY 1, 2, 3, 4
ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET spend_cents = stats_daily.spend_cents + excluded.spend_cents,
    earned_cents = stats_daily.earned_cents + excluded.earned_cents;
INSERT INTO stats_daily_holds (app_id, day, opened, resolved, charged, charged_cents, floored, floor_cents, publisher_suspended)
SELECT h.advertiser_app_id, stats_utc_day(h.created_at), count(*), count(r.hold_id),
  count(*) FILTER (WHERE r.resolution = 'charge'),
  coalesce(sum(h.amount) FILTER (WHERE r.resolution = 'charge'), 0),
  count(f.floor_cents) FILTER (WHERE r.resolution = 'charge'),
  coalesce(sum(f.floor_cents) FILTER (WHERE r.resolution = 'charge'), 0),
  count(*) FILTER (WHERE r.resolution = 'release' AND c.reason = 'publisher_suspended')
FROM escrow_holds h LEFT JOIN escrow_resolutions r ON r.hold_id = h.id
LEFT JOIN chains c ON c.id = h.chain_id
LEFT JOIN LATERAL (SELECT cf.floor_cents FROM category_floors cf WHERE cf.category = c.category AND cf.platform = c.platform
  ORDER BY CASE WHEN cf.at <= c.offered_at THEN cf.version ELSE -cf.version END DESC LIMIT 1) f ON true
GROUP BY 1, 2;

REVOKE ALL ON stats_daily, stats_daily_rejections, stats_daily_categories, stats_daily_holds FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON stats_daily, stats_daily_rejections, stats_daily_categories, stats_daily_holds TO xpromo_app;

-- +goose Down
DROP TRIGGER ledger_lines_stats ON ledger_lines;
DROP TRIGGER escrow_resolutions_stats ON escrow_resolutions;
DROP TRIGGER escrow_holds_stats ON escrow_holds;
DROP TRIGGER fill_counts_stats ON fill_counts;
DROP TRIGGER chains_stats_update ON chains;
DROP TRIGGER chains_stats_insert ON chains;
DROP FUNCTION stats_ledger_lines(), stats_escrow_resolutions(), stats_escrow_holds(), stats_fill_counts(), stats_chains(),
    stats_chain_apply(chains, int, bigint), stats_chain_part(chains, int), stats_utc_day(timestamptz),
    stats_add(text, text, text, date, bigint, bigint, bigint, bigint, bigint, bigint, bigint, bigint, bigint, bigint, bigint);
DROP INDEX escrow_holds_chain;
DROP TABLE stats_daily_holds, stats_daily_categories, stats_daily_rejections, stats_daily;
