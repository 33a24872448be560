-- +goose Up
-- The chains' update trigger, cheaper per sweep batch (BENCHMARKS.md,
-- "Clearing, round 4"). 00036's stats_chains_updated turned every changed
-- chain into two facts (old row −1, new row +1), each expanded into all
-- seven stats_daily part rows and the other rollups' rows, and let the
-- sums cancel what the update did not change: for a settlement (activated
-- to cleared) 14 part rows a chain, of which 12 cancel, through a composite
-- array unnested four times. Timed in a sweep batch of 500 chains: the
-- trigger took 40 of the update's 79 ms.
--
-- Here each part is compared before it is summed: a part whose key and
-- figures are the same in the old and the new row adds +x and −x to the
-- same rollup row, so it is left out; a part that changed adds its old
-- figures with −1 and its new ones with +1, as before. The sums of every
-- rollup row are therefore the same as 00036's, and a row whose sum is all
-- zero is not written, as before; the upserts keep 00036's order
-- (stats_daily's advertiser rows before its publisher rows, then by app,
-- day and campaign; the other rollups in key order). The parts are 00036's
-- stats_chains_apply, spelled out per part, and stats_chains_apply (the
-- insert trigger's) now reads them too: the parts are defined once, here.
-- server/storetest Rollups checks both triggers against the raw facts.
CREATE TYPE stats_daily_part AS (
    app_id       text COLLATE "C",
    side         text COLLATE "C",
    campaign_id  text COLLATE "C",
    day          date,
    clicks       bigint,
    installs     bigint,
    activated    bigint,
    cleared      bigint,
    refunded     bigint,
    rejected     bigint,
    chains       bigint,
    chains_fraud bigint
);

-- One stats_daily part of a chain row (00036's stats_chains_apply, part p;
-- parts 1 and 4 have an advertiser and a publisher row: p 1 to 7). NULL app_id
-- when the part does not apply to the row.
-- +goose StatementBegin
CREATE FUNCTION stats_chains_daily_part(p int, state text, reason text, clicked boolean, campaign_id text, advertiser text,
    publisher text, created_at timestamptz, installed_at timestamptz, activated_at timestamptz, resolved_at timestamptz)
RETURNS stats_daily_part LANGUAGE sql IMMUTABLE AS $$
SELECT CASE p
    -- part 1, by created_at: every chain, its click, its fraud rejection
    WHEN 1 THEN ROW(advertiser, 'advertiser', campaign_id, stats_utc_day(created_at),
        CASE WHEN clicked THEN 1 ELSE 0 END, 0, 0, 0, 0, 0, 1,
        CASE WHEN state = 'rejected' AND reason LIKE 'fraud\_%' THEN 1 ELSE 0 END)::stats_daily_part
    WHEN 2 THEN ROW(CASE WHEN publisher <> '' AND clicked THEN publisher END, 'publisher', campaign_id,
        stats_utc_day(created_at), 1, 0, 0, 0, 0, 0, 0, 0)::stats_daily_part
    -- part 2, by installed_at
    WHEN 3 THEN ROW(CASE WHEN installed_at IS NOT NULL THEN advertiser END, 'advertiser', campaign_id,
        stats_utc_day(installed_at), 0, 1, 0, 0, 0, 0, 0, 0)::stats_daily_part
    WHEN 4 THEN ROW(CASE WHEN installed_at IS NOT NULL AND publisher <> '' THEN publisher END, 'publisher',
        campaign_id, stats_utc_day(installed_at), 0, 1, 0, 0, 0, 0, 0, 0)::stats_daily_part
    -- part 3, by activated_at
    WHEN 5 THEN ROW(CASE WHEN activated_at IS NOT NULL THEN advertiser END, 'advertiser', campaign_id,
        stats_utc_day(activated_at), 0, 0, 1, 0, 0, 0, 0, 0)::stats_daily_part
    -- part 4, by resolved_at: the final states
    WHEN 6 THEN ROW(CASE WHEN state IN ('cleared', 'refunded', 'rejected') AND resolved_at IS NOT NULL THEN advertiser END,
        'advertiser', campaign_id, stats_utc_day(resolved_at), 0, 0, 0,
        CASE WHEN state = 'cleared' THEN 1 ELSE 0 END, CASE WHEN state = 'refunded' THEN 1 ELSE 0 END,
        CASE WHEN state = 'rejected' THEN 1 ELSE 0 END, 0, 0)::stats_daily_part
    WHEN 7 THEN ROW(CASE WHEN state = 'cleared' AND resolved_at IS NOT NULL AND publisher <> '' THEN publisher END,
        'publisher', campaign_id, stats_utc_day(resolved_at), 0, 0, 0, 1, 0, 0, 0, 0)::stats_daily_part
END
$$;
-- +goose StatementEnd

-- stats_chains_apply (the insert trigger's, 00036) reads its stats_daily
-- rows from the same stats_chains_daily_part as the update trigger, each
-- part's figures times the fact's sign: one definition of the parts.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stats_chains_apply(f stats_chain_fact[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stats_daily AS t (app_id, side, campaign_id, day, clicks, installs, activated, cleared, refunded, rejected,
        chains, chains_fraud)
    SELECT (x.r).app_id, (x.r).side, (x.r).campaign_id, (x.r).day, sum(x.s * (x.r).clicks), sum(x.s * (x.r).installs),
        sum(x.s * (x.r).activated), sum(x.s * (x.r).cleared), sum(x.s * (x.r).refunded), sum(x.s * (x.r).rejected),
        sum(x.s * (x.r).chains), sum(x.s * (x.r).chains_fraud)
    -- OFFSET 0: each part computed once (see stats_chains_updated).
    FROM (SELECT c.s, stats_chains_daily_part(p, c.state, c.reason, c.clicked, c.campaign_id, c.advertiser_app_id,
            c.publisher_app_id, c.created_at, c.installed_at, c.activated_at, c.resolved_at) AS r
        FROM unnest(f) c CROSS JOIN generate_series(1, 7) p
        OFFSET 0) x
    WHERE (x.r).app_id IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING sum(x.s * (x.r).clicks) <> 0 OR sum(x.s * (x.r).installs) <> 0 OR sum(x.s * (x.r).activated) <> 0
        OR sum(x.s * (x.r).cleared) <> 0 OR sum(x.s * (x.r).refunded) <> 0 OR sum(x.s * (x.r).rejected) <> 0
        OR sum(x.s * (x.r).chains) <> 0 OR sum(x.s * (x.r).chains_fraud) <> 0
    ORDER BY 2, 1, 4, 3
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
CREATE OR REPLACE FUNCTION stats_chains_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- stats_daily: each part that changed, its old row −1 and its new row +1.
    INSERT INTO stats_daily AS t (app_id, side, campaign_id, day, clicks, installs, activated, cleared, refunded, rejected,
        chains, chains_fraud)
    SELECT (v.r).app_id, (v.r).side, (v.r).campaign_id, (v.r).day, sum(v.s * (v.r).clicks), sum(v.s * (v.r).installs),
        sum(v.s * (v.r).activated), sum(v.s * (v.r).cleared), sum(v.s * (v.r).refunded), sum(v.s * (v.r).rejected),
        sum(v.s * (v.r).chains), sum(v.s * (v.r).chains_fraud)
    -- OFFSET 0 keeps the subquery whole, so each part is computed once: flattened,
    -- every field read of (v.r) evaluated the part's expression again (4× the time).
    FROM (SELECT
        stats_chains_daily_part(p, o.state, o.reason, o.nonce IS NOT NULL, o.campaign_id, o.advertiser_app_id, o.publisher_app_id,
            o.created_at, o.installed_at, o.activated_at, o.resolved_at) AS old,
        stats_chains_daily_part(p, n.state, n.reason, n.nonce IS NOT NULL, n.campaign_id, n.advertiser_app_id, n.publisher_app_id,
            n.created_at, n.installed_at, n.activated_at, n.resolved_at) AS new
        FROM old_chains o JOIN new_chains n ON n.id = o.id CROSS JOIN generate_series(1, 7) p
        -- A part whose inputs are all unchanged is unchanged: skip it before
        -- building its rows (a settlement changes the inputs of parts 6 and 7 only).
        WHERE CASE p
            WHEN 1 THEN (o.advertiser_app_id, o.campaign_id, o.created_at, o.nonce IS NULL,
                    o.state = 'rejected' AND o.reason LIKE 'fraud\_%')
                IS DISTINCT FROM (n.advertiser_app_id, n.campaign_id, n.created_at, n.nonce IS NULL,
                    n.state = 'rejected' AND n.reason LIKE 'fraud\_%')
            WHEN 2 THEN (o.publisher_app_id, o.campaign_id, o.created_at, o.nonce IS NULL)
                IS DISTINCT FROM (n.publisher_app_id, n.campaign_id, n.created_at, n.nonce IS NULL)
            WHEN 3 THEN (o.advertiser_app_id, o.campaign_id, o.installed_at)
                IS DISTINCT FROM (n.advertiser_app_id, n.campaign_id, n.installed_at)
            WHEN 4 THEN (o.publisher_app_id, o.campaign_id, o.installed_at)
                IS DISTINCT FROM (n.publisher_app_id, n.campaign_id, n.installed_at)
            WHEN 5 THEN (o.advertiser_app_id, o.campaign_id, o.activated_at)
                IS DISTINCT FROM (n.advertiser_app_id, n.campaign_id, n.activated_at)
            WHEN 6 THEN (o.advertiser_app_id, o.campaign_id, o.state, o.resolved_at)
                IS DISTINCT FROM (n.advertiser_app_id, n.campaign_id, n.state, n.resolved_at)
            ELSE (o.publisher_app_id, o.campaign_id, o.state, o.resolved_at)
                IS DISTINCT FROM (n.publisher_app_id, n.campaign_id, n.state, n.resolved_at)
        END
        OFFSET 0) x
    CROSS JOIN LATERAL (VALUES (-1::bigint, x.old), (1::bigint, x.new)) v (s, r)
    WHERE x.old IS DISTINCT FROM x.new AND (v.r).app_id IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING sum(v.s * (v.r).clicks) <> 0 OR sum(v.s * (v.r).installs) <> 0 OR sum(v.s * (v.r).activated) <> 0
        OR sum(v.s * (v.r).cleared) <> 0 OR sum(v.s * (v.r).refunded) <> 0 OR sum(v.s * (v.r).rejected) <> 0
        OR sum(v.s * (v.r).chains) <> 0 OR sum(v.s * (v.r).chains_fraud) <> 0
    ORDER BY 2, 1, 4, 3
    ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET
        clicks = t.clicks + excluded.clicks, installs = t.installs + excluded.installs,
        activated = t.activated + excluded.activated, cleared = t.cleared + excluded.cleared,
        refunded = t.refunded + excluded.refunded, rejected = t.rejected + excluded.rejected,
        chains = t.chains + excluded.chains, chains_fraud = t.chains_fraud + excluded.chains_fraud;

    -- The rollups of the final states (00036's gate: a row, old or new, in one).
    IF NOT EXISTS (SELECT 1 FROM new_chains WHERE state IN ('cleared', 'rejected', 'refunded'))
        AND NOT EXISTS (SELECT 1 FROM old_chains WHERE state IN ('cleared', 'rejected', 'refunded')) THEN
        RETURN NULL;
    END IF;

    INSERT INTO stats_daily_rejections AS t (app_id, day, reason, campaign_id, chains)
    SELECT v.app_id, v.day, v.reason, v.campaign_id, sum(v.s)
    FROM old_chains o JOIN new_chains n ON n.id = o.id
    CROSS JOIN LATERAL (VALUES
        (-1::bigint, o.state = 'rejected' AND o.resolved_at IS NOT NULL, o.advertiser_app_id, stats_utc_day(o.resolved_at), o.reason, o.campaign_id),
        (1::bigint, n.state = 'rejected' AND n.resolved_at IS NOT NULL, n.advertiser_app_id, stats_utc_day(n.resolved_at), n.reason, n.campaign_id)
    ) v (s, counts, app_id, day, reason, campaign_id)
    WHERE v.counts AND (o.state = 'rejected' OR n.state = 'rejected')
    GROUP BY 1, 2, 3, 4 HAVING sum(v.s) <> 0 ORDER BY 1, 2, 3, 4
    ON CONFLICT (app_id, day, reason, campaign_id) DO UPDATE SET chains = t.chains + excluded.chains;

    INSERT INTO stats_daily_categories AS t (day, category, cleared, cleared_cents)
    SELECT v.day, v.category, sum(v.s), sum(v.s * v.price_cents)
    FROM old_chains o JOIN new_chains n ON n.id = o.id
    CROSS JOIN LATERAL (VALUES
        (-1::bigint, o.state = 'cleared' AND o.resolved_at IS NOT NULL, stats_utc_day(o.resolved_at), o.category, o.price_cents),
        (1::bigint, n.state = 'cleared' AND n.resolved_at IS NOT NULL, stats_utc_day(n.resolved_at), n.category, n.price_cents)
    ) v (s, counts, day, category, price_cents)
    WHERE v.counts AND (o.state = 'cleared' OR n.state = 'cleared')
    GROUP BY 1, 2 HAVING sum(v.s) <> 0 OR sum(v.s * v.price_cents) <> 0 ORDER BY 1, 2
    ON CONFLICT (day, category) DO UPDATE SET cleared = t.cleared + excluded.cleared,
        cleared_cents = t.cleared_cents + excluded.cleared_cents;

    -- part 5: the hold of a chain refunded publisher_suspended, when its
    -- release is already written (otherwise the release's trigger counts it).
    IF EXISTS (SELECT 1 FROM new_chains WHERE state = 'refunded' AND reason = 'publisher_suspended')
        OR EXISTS (SELECT 1 FROM old_chains WHERE state = 'refunded' AND reason = 'publisher_suspended') THEN
        INSERT INTO stats_daily_holds AS t (app_id, day, publisher_suspended)
        SELECT h.advertiser_app_id, stats_utc_day(h.created_at), sum(v.s)
        FROM old_chains o JOIN new_chains n ON n.id = o.id
        CROSS JOIN LATERAL (VALUES
            (-1::bigint, o.state = 'refunded' AND o.reason = 'publisher_suspended'),
            (1::bigint, n.state = 'refunded' AND n.reason = 'publisher_suspended')
        ) v (s, counts)
        JOIN escrow_holds h ON h.chain_id = n.id
        JOIN escrow_resolutions x ON x.hold_id = h.id AND x.resolution = 'release'
        WHERE v.counts
        GROUP BY 1, 2 HAVING sum(v.s) <> 0 ORDER BY 1, 2
        ON CONFLICT (app_id, day) DO UPDATE SET publisher_suspended = t.publisher_suspended + excluded.publisher_suspended;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- The resolutions' and the lines' triggers look up each row's hold and chain
-- by primary key. Joined, the planner hashed the whole of escrow_holds (for
-- the resolutions) and of chains (for the lines' campaigns) on every sweep
-- batch: a sequential scan of a table that grows with history (10,000 holds
-- took 3.5 of the resolutions trigger's 9 ms, 10,000 chains 16 of the
-- lines' 27 ms in psql). A LATERAL subquery with LIMIT 1 is not pulled up into
-- a join, so its plan stays one index probe per row, whatever the size of
-- the table. Same rows, same sums (a resolution has exactly one hold, a
-- hold at most one chain, by key).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stats_escrow_resolutions_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO stats_daily_holds AS t (app_id, day, resolved, charged, charged_cents, floored, floor_cents, publisher_suspended)
    SELECT h.advertiser_app_id, stats_utc_day(h.created_at), count(*),
        count(*) FILTER (WHERE n.resolution = 'charge'),
        coalesce(sum(h.amount) FILTER (WHERE n.resolution = 'charge'), 0),
        count(f.floor_cents) FILTER (WHERE n.resolution = 'charge'),
        coalesce(sum(f.floor_cents) FILTER (WHERE n.resolution = 'charge'), 0),
        count(*) FILTER (WHERE n.resolution = 'release' AND c.reason IS NOT DISTINCT FROM 'publisher_suspended')
    FROM new_resolutions n
    CROSS JOIN LATERAL (SELECT eh.advertiser_app_id, eh.created_at, eh.amount, eh.chain_id FROM escrow_holds eh
        WHERE eh.id = n.hold_id LIMIT 1) h
    LEFT JOIN LATERAL (SELECT ch.reason, ch.category, ch.platform, ch.offered_at FROM chains ch
        WHERE ch.id = h.chain_id LIMIT 1) c ON true
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
    FROM new_lines l
    LEFT JOIN LATERAL (SELECT ch.campaign_id FROM chains ch WHERE ch.id = l.chain_id LIMIT 1) c ON true
    WHERE l.type IN ('charge', 'earn', 'clawback') AND l.chain_id IS NOT NULL AND l.account_id LIKE 'wallet:%'
    GROUP BY 1, 2, 3, 4 ORDER BY 2, 1, 4, 3
    ON CONFLICT (app_id, side, day, campaign_id) DO UPDATE SET spend_cents = t.spend_cents + excluded.spend_cents,
        earned_cents = t.earned_cents + excluded.earned_cents;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stats_escrow_resolutions_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION stats_chains_updated() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- 00036's stats_chains_apply, before the part function goes.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION stats_chains_apply(f stats_chain_fact[]) RETURNS void LANGUAGE plpgsql AS $$
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

DROP FUNCTION stats_chains_daily_part(int, text, text, boolean, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz);
DROP TYPE stats_daily_part;
