-- +goose Up
-- A campaign's spend of each UTC day, kept by triggers on chains, so that an
-- install claim checks the daily budget by reading one row instead of
-- summing every chain the campaign installed that day (docs/marketplace.md
-- "Budgets"). spent_cents is, at every commit, exactly
--
--   SELECT sum(price_cents) FROM chains
--   WHERE campaign_id = c AND (installed_at AT TIME ZONE 'UTC')::date = d
--     AND installed_at IS NOT NULL AND state IN ('installed', 'activated_48h', 'cleared')
--
-- (the spend states of server/postgres/attribution.go). Triggers rather than
-- the application: every writer of chains (claims, heartbeats, the sweep's
-- clears and refunds, anything later) keeps it true in its own transaction
-- without knowing of it. A row whose chains all left the spend states stays,
-- at 0.
CREATE TABLE campaign_spend (
    campaign_id text COLLATE "C" NOT NULL,
    day         date             NOT NULL,
    spent_cents bigint           NOT NULL,
    PRIMARY KEY (campaign_id, day)
);

INSERT INTO campaign_spend (campaign_id, day, spent_cents)
SELECT campaign_id, (installed_at AT TIME ZONE 'UTC')::date, sum(price_cents) FROM chains
WHERE installed_at IS NOT NULL AND state IN ('installed', 'activated_48h', 'cleared')
GROUP BY 1, 2;

-- +goose StatementBegin
CREATE FUNCTION chains_campaign_spend() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.installed_at IS NOT NULL AND OLD.state IN ('installed', 'activated_48h', 'cleared') THEN
        UPDATE campaign_spend SET spent_cents = spent_cents - OLD.price_cents
        WHERE campaign_id = OLD.campaign_id AND day = (OLD.installed_at AT TIME ZONE 'UTC')::date;
    END IF;
    IF NEW.installed_at IS NOT NULL AND NEW.state IN ('installed', 'activated_48h', 'cleared') THEN
        INSERT INTO campaign_spend (campaign_id, day, spent_cents)
        VALUES (NEW.campaign_id, (NEW.installed_at AT TIME ZONE 'UTC')::date, NEW.price_cents)
        ON CONFLICT (campaign_id, day) DO UPDATE SET spent_cents = campaign_spend.spent_cents + excluded.spent_cents;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- AFTER, not BEFORE: an INSERT … ON CONFLICT DO NOTHING that inserts
-- nothing fires no AFTER trigger. The WHEN clauses keep the function off
-- every row whose spend does not change (a click, a heartbeat, a clear:
-- activated_48h to cleared stays in the spend states).
CREATE TRIGGER chains_spend_insert AFTER INSERT ON chains FOR EACH ROW
WHEN (NEW.installed_at IS NOT NULL AND NEW.state IN ('installed', 'activated_48h', 'cleared'))
EXECUTE FUNCTION chains_campaign_spend();
CREATE TRIGGER chains_spend_update AFTER UPDATE ON chains FOR EACH ROW
WHEN ((OLD.installed_at IS NOT NULL AND OLD.state IN ('installed', 'activated_48h', 'cleared'))
      IS DISTINCT FROM (NEW.installed_at IS NOT NULL AND NEW.state IN ('installed', 'activated_48h', 'cleared'))
   OR (NEW.installed_at IS NOT NULL AND NEW.state IN ('installed', 'activated_48h', 'cleared')
      AND (OLD.campaign_id, OLD.price_cents, OLD.installed_at) IS DISTINCT FROM (NEW.campaign_id, NEW.price_cents, NEW.installed_at)))
EXECUTE FUNCTION chains_campaign_spend();
-- Also under session_replication_role = replica: the counter must follow
-- every write.
ALTER TABLE chains ENABLE ALWAYS TRIGGER chains_spend_insert;
ALTER TABLE chains ENABLE ALWAYS TRIGGER chains_spend_update;

REVOKE ALL ON campaign_spend FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON campaign_spend TO xpromo_app;

-- +goose Down
DROP TRIGGER chains_spend_update ON chains;
DROP TRIGGER chains_spend_insert ON chains;
DROP FUNCTION chains_campaign_spend();
DROP TABLE campaign_spend;
