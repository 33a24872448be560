-- +goose Up
-- The rollups of 00032, kept per statement instead of per row on the
-- write paths that write many rows at once (the sweep: 500 chains, 500
-- resolutions, 2,500 lines per transaction). The figures are the same, by
-- the same definitions (00032's comments); what changes is how often they
-- are written:
--
--   - a row trigger ran its upserts once per row and part, each through
--     stats_add, a SQL function, which PostgreSQL parses and plans again on
--     every call from PL/pgSQL: about a dozen planned upserts per settled
--     chain. A statement trigger reads the statement's transition tables,
--     sums the facts per rollup row and upserts each row once, with plans
--     PL/pgSQL keeps;
--   - a part a chain's update does not change adds its figures once with
--     −1 (the old row) and once with +1 (the new row): they cancel in the
--     sum, and rollup rows whose sum is all zero are not written (the row
--     trigger did not write them either: it skipped unchanged parts).
--
-- Every rollup upsert writes its rows in one order: stats_daily's
-- advertiser rows before its publisher rows (as 00032 and the fill counts'
-- row trigger do, docs/stats.md "Cost on the write path"), then by app,
-- day and campaign; the other rollups in key order.
--
-- A chain's facts, as a chain update moves them: s is +1 for the row as it
-- is now, −1 for the row as it was.
CREATE TYPE stats_chain_fact AS (
    s                 bigint,
    id                text COLLATE "C",
    state             text COLLATE "C",
    reason            text COLLATE "C",
    clicked           boolean,
    campaign_id       text COLLATE "C",
    advertiser_app_id text COLLATE "C",
    publisher_app_id  text COLLATE "C",
    category          text COLLATE "C",
    price_cents       bigint,
    created_at        timestamptz,
    installed_at      timestamptz,
    activated_at      timestamptz,
    resolved_at       timestamptz
);

-- +goose StatementBegin
CREATE FUNCTION stats_chains_apply(f stats_chain_fact[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- stats_daily: the five parts of 00032's stats_chain_part (the fifth,
    -- publisher_suspended, is a hold's figure, below).
    INSERT INTO stats_daily AS t (app_id, side, campaign_id, day, clicks, installs, activated, cleared, refunded, rejected,
        chains, chains_fraud)
    SELECT d.app_id, d.side, d.campaign_id, d.day, sum(d.clicks), sum(d.installs), sum(d.activated), sum(d.cleared),
        sum(d.refunded), sum(d.rejected), sum(d.chains), sum(d.chains_fraud)
    FROM unnest(f) c
    CROSS JOIN LATERAL (VALUES
        -- part 1, by created_at: every chain, its click, its fraud rejection
        (c.advertiser_app_id, 'advertiser', c.campaign_id, stats_utc_day(c.created_at),
            CASE WHEN c.clicked THEN c.s ELSE 0 END, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, c.s,
            CASE WHEN c.state = 'rejected' AND c.reason LIKE 'fraud\_%' THEN c.s ELSE 0 END),
        (CASE WHEN c.publisher_app_id <> '' AND c.clicked THEN c.publisher_app_id END, 'publisher', c.campaign_id,
            stats_utc_day(c.created_at), c.s, 0, 0, 0, 0, 0, 0, 0),
        -- part 2, by installed_at
        (CASE WHEN c.installed_at IS NOT NULL THEN c.advertiser_app_id END, 'advertiser', c.campaign_id,
            stats_utc_day(c.installed_at), 0, c.s, 0, 0, 0, 0, 0, 0),
        (CASE WHEN c.installed_at IS NOT NULL AND c.publisher_app_id <> '' THEN c.publisher_app_id END, 'publisher',
            c.campaign_id, stats_utc_day(c.installed_at), 0, c.s, 0, 0, 0, 0, 0, 0),
        -- part 3, by activated_at
        (CASE WHEN c.activated_at IS NOT NULL THEN c.advertiser_app_id END, 'advertiser', c.campaign_id,
            stats_utc_day(c.activated_at), 0, 0, c.s, 0, 0, 0, 0, 0),
        -- part 4, by resolved_at: the final states
        (CASE WHEN c.state IN ('cleared', 'refunded', 'rejected') AND c.resolved_at IS NOT NULL THEN c.advertiser_app_id END,
            'advertiser', c.campaign_id, stats_utc_day(c.resolved_at), 0, 0, 0,
            CASE WHEN c.state = 'cleared' THEN c.s ELSE 0 END, CASE WHEN c.state = 'refunded' THEN c.s ELSE 0 END,
            CASE WHEN c.state = 'rejected' THEN c.s ELSE 0 END, 0, 0),
        (CASE WHEN c.state = 'cleared' AND c.resolved_at IS NOT NULL AND c.publisher_app_id <> '' THEN c.publisher_app_id END,
            'publisher', c.campaign_id, stats_utc_day(c.resolved_at), 0, 0, 0, c.s, 0, 0, 0, 0)
    ) d (app_id, side, campaign_id, day, clicks, installs, activated, cleared, refunded, rejected, chains, chains_fraud)
    WHERE d.app_id IS NOT NULL
    GROUP BY d.app_id, d.side, d.campaign_id, d.day
    HAVING sum(d.clicks) <> 0 OR sum(d.installs) <> 0 OR sum(d.activated) <> 0 OR sum(d.cleared) <> 0
        OR sum(d.refunded) <> 0 OR sum(d.rejected) <> 0 OR sum(d.chains) <> 0 OR sum(d.chains_fraud) <> 0
    ORDER BY d.side, d.app_id, d.day, d.campaign_id
    ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET
        clicks = t.clicks + excluded.clicks, installs = t.installs + excluded.installs,
        activated = t.activated + excluded.activated, cleared = t.cleared + excluded.cleared,
        refunded = t.refunded + excluded.refunded, rejected = t.rejected + excluded.rejected,
        chains = t.chains + excluded.chains, chains_fraud = t.chains_fraud + excluded.chains_fraud;

    IF EXISTS (SELECT 1 FROM unnest(f) c WHERE c.state IN ('cleared', 'rejected', 'refunded')) THEN
        INSERT INTO stats_daily_rejections AS t (app_id, day, reason, campaign_id, chains)
        SELECT c.advertiser_app_id, stats_utc_day(c.resolved_at), c.reason, c.campaign_id, sum(c.s)
        FROM unnest(f) c WHERE c.state = 'rejected' AND c.resolved_at IS NOT NULL
        GROUP BY 1, 2, 3, 4 HAVING sum(c.s) <> 0 ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, day, reason, campaign_id) DO UPDATE SET chains = t.chains + excluded.chains;

        INSERT INTO stats_daily_categories AS t (day, category, cleared, cleared_cents)
        SELECT stats_utc_day(c.resolved_at), c.category, sum(c.s), sum(c.s * c.price_cents)
        FROM unnest(f) c WHERE c.state = 'cleared' AND c.resolved_at IS NOT NULL
        GROUP BY 1, 2 HAVING sum(c.s) <> 0 OR sum(c.s * c.price_cents) <> 0 ORDER BY 1, 2
        ON CONFLICT (day, category) DO UPDATE SET cleared = t.cleared + excluded.cleared,
            cleared_cents = t.cleared_cents + excluded.cleared_cents;

        -- part 5: the hold of a chain refunded publisher_suspended, when its
        -- release is already written (otherwise the release's trigger
        -- counts it).
        INSERT INTO stats_daily_holds AS t (app_id, day, publisher_suspended)
        SELECT h.advertiser_app_id, stats_utc_day(h.created_at), sum(c.s)
        FROM unnest(f) c JOIN escrow_holds h ON h.chain_id = c.id
        JOIN escrow_resolutions x ON x.hold_id = h.id AND x.resolution = 'release'
        WHERE c.state = 'refunded' AND c.reason = 'publisher_suspended'
        GROUP BY 1, 2 HAVING sum(c.s) <> 0 ORDER BY 1, 2
        ON CONFLICT (app_id, day) DO UPDATE SET publisher_suspended = t.publisher_suspended + excluded.publisher_suspended;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_chains_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    f stats_chain_fact[];
BEGIN
    SELECT array_agg(ROW(1, n.id, n.state, n.reason, n.nonce IS NOT NULL, n.campaign_id, n.advertiser_app_id,
        n.publisher_app_id, n.category, n.price_cents, n.created_at, n.installed_at, n.activated_at,
        n.resolved_at)::stats_chain_fact)
    INTO f FROM new_chains n;
    IF f IS NOT NULL THEN
        PERFORM stats_chains_apply(f);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Pairs the old and new rows by id (a chain's id is never updated) and
-- keeps the pairs whose rollup columns changed, 00032's WHEN clause.
-- +goose StatementBegin
CREATE FUNCTION stats_chains_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    f stats_chain_fact[];
BEGIN
    SELECT array_agg(v.fact) INTO f
    FROM old_chains o JOIN new_chains n ON n.id = o.id
    CROSS JOIN LATERAL (VALUES
        (ROW(-1, o.id, o.state, o.reason, o.nonce IS NOT NULL, o.campaign_id, o.advertiser_app_id,
            o.publisher_app_id, o.category, o.price_cents, o.created_at, o.installed_at, o.activated_at,
            o.resolved_at)::stats_chain_fact),
        (ROW(1, n.id, n.state, n.reason, n.nonce IS NOT NULL, n.campaign_id, n.advertiser_app_id,
            n.publisher_app_id, n.category, n.price_cents, n.created_at, n.installed_at, n.activated_at,
            n.resolved_at)::stats_chain_fact)
    ) v (fact)
    WHERE (o.state, o.reason, o.nonce, o.campaign_id, o.advertiser_app_id, o.publisher_app_id, o.category,
           o.price_cents, o.created_at, o.installed_at, o.activated_at, o.resolved_at)
        IS DISTINCT FROM (n.state, n.reason, n.nonce, n.campaign_id, n.advertiser_app_id, n.publisher_app_id, n.category,
           n.price_cents, n.created_at, n.installed_at, n.activated_at, n.resolved_at);
    IF f IS NOT NULL THEN
        PERFORM stats_chains_apply(f);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_escrow_resolutions_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stats_daily_holds AS t (app_id, day, resolved, charged, charged_cents, floored, floor_cents, publisher_suspended)
    SELECT h.advertiser_app_id, stats_utc_day(h.created_at), count(*),
        count(*) FILTER (WHERE n.resolution = 'charge'),
        coalesce(sum(h.amount) FILTER (WHERE n.resolution = 'charge'), 0),
        count(f.floor_cents) FILTER (WHERE n.resolution = 'charge'),
        coalesce(sum(f.floor_cents) FILTER (WHERE n.resolution = 'charge'), 0),
        count(*) FILTER (WHERE n.resolution = 'release' AND c.reason IS NOT DISTINCT FROM 'publisher_suspended')
    FROM new_resolutions n JOIN escrow_holds h ON h.id = n.hold_id
    LEFT JOIN chains c ON c.id = h.chain_id
    LEFT JOIN LATERAL (SELECT cf.floor_cents FROM category_floors cf WHERE cf.category = c.category AND cf.platform = c.platform
        ORDER BY CASE WHEN cf.at <= c.offered_at THEN cf.version ELSE -cf.version END DESC LIMIT 1) f ON true
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (app_id, day) DO UPDATE SET resolved = t.resolved + excluded.resolved,
        charged = t.charged + excluded.charged, charged_cents = t.charged_cents + excluded.charged_cents,
        floored = t.floored + excluded.floored, floor_cents = t.floor_cents + excluded.floor_cents,
        publisher_suspended = t.publisher_suspended + excluded.publisher_suspended;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION stats_ledger_lines_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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

DROP TRIGGER chains_stats_insert ON chains;
DROP TRIGGER chains_stats_update ON chains;
DROP TRIGGER escrow_resolutions_stats ON escrow_resolutions;
DROP TRIGGER ledger_lines_stats ON ledger_lines;
CREATE TRIGGER chains_stats_insert AFTER INSERT ON chains REFERENCING NEW TABLE AS new_chains
FOR EACH STATEMENT EXECUTE FUNCTION stats_chains_inserted();
CREATE TRIGGER chains_stats_update AFTER UPDATE ON chains REFERENCING OLD TABLE AS old_chains NEW TABLE AS new_chains
FOR EACH STATEMENT EXECUTE FUNCTION stats_chains_updated();
CREATE TRIGGER escrow_resolutions_stats AFTER INSERT ON escrow_resolutions REFERENCING NEW TABLE AS new_resolutions
FOR EACH STATEMENT EXECUTE FUNCTION stats_escrow_resolutions_inserted();
CREATE TRIGGER ledger_lines_stats AFTER INSERT ON ledger_lines REFERENCING NEW TABLE AS new_lines
FOR EACH STATEMENT EXECUTE FUNCTION stats_ledger_lines_inserted();
-- Also under session_replication_role = replica: the rollups follow every write.
ALTER TABLE chains ENABLE ALWAYS TRIGGER chains_stats_insert;
ALTER TABLE chains ENABLE ALWAYS TRIGGER chains_stats_update;
ALTER TABLE escrow_resolutions ENABLE ALWAYS TRIGGER escrow_resolutions_stats;
ALTER TABLE ledger_lines ENABLE ALWAYS TRIGGER ledger_lines_stats;

-- +goose Down
DROP TRIGGER ledger_lines_stats ON ledger_lines;
DROP TRIGGER escrow_resolutions_stats ON escrow_resolutions;
DROP TRIGGER chains_stats_update ON chains;
DROP TRIGGER chains_stats_insert ON chains;
DROP FUNCTION stats_ledger_lines_inserted(), stats_escrow_resolutions_inserted(), stats_chains_updated(),
    stats_chains_inserted(), stats_chains_apply(stats_chain_fact[]);
DROP TYPE stats_chain_fact;
CREATE TRIGGER chains_stats_insert AFTER INSERT ON chains FOR EACH ROW EXECUTE FUNCTION stats_chains();
CREATE TRIGGER chains_stats_update AFTER UPDATE ON chains FOR EACH ROW
WHEN ((OLD.state, OLD.reason, OLD.nonce, OLD.campaign_id, OLD.advertiser_app_id, OLD.publisher_app_id, OLD.category,
       OLD.price_cents, OLD.created_at, OLD.installed_at, OLD.activated_at, OLD.resolved_at)
      IS DISTINCT FROM (NEW.state, NEW.reason, NEW.nonce, NEW.campaign_id, NEW.advertiser_app_id, NEW.publisher_app_id, NEW.category,
       NEW.price_cents, NEW.created_at, NEW.installed_at, NEW.activated_at, NEW.resolved_at))
EXECUTE FUNCTION stats_chains();
CREATE TRIGGER escrow_resolutions_stats AFTER INSERT ON escrow_resolutions FOR EACH ROW EXECUTE FUNCTION stats_escrow_resolutions();
CREATE TRIGGER ledger_lines_stats AFTER INSERT ON ledger_lines FOR EACH ROW
WHEN (NEW.type IN ('charge', 'earn', 'clawback') AND NEW.chain_id IS NOT NULL AND NEW.account_id LIKE 'wallet:%')
EXECUTE FUNCTION stats_ledger_lines();
ALTER TABLE chains ENABLE ALWAYS TRIGGER chains_stats_insert;
ALTER TABLE chains ENABLE ALWAYS TRIGGER chains_stats_update;
ALTER TABLE escrow_resolutions ENABLE ALWAYS TRIGGER escrow_resolutions_stats;
ALTER TABLE ledger_lines ENABLE ALWAYS TRIGGER ledger_lines_stats;
