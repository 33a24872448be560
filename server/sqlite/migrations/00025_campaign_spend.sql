-- +goose Up
-- A campaign's spend of each UTC day, kept by triggers on chains, so that an
-- install claim checks the daily budget by reading one row instead of
-- summing every chain the campaign installed that day (docs/marketplace.md
-- "Budgets"). day is the microseconds of the day's midnight UTC; spent_cents
-- is, at every commit, exactly the sum of price_cents over the campaign's
-- chains with installed_at > 0 in that day and a state in ('installed',
-- 'activated_48h', 'cleared') (the spend states of
-- server/sqlite/attribution.go). Triggers rather than the application: every
-- writer of chains keeps it true in its own transaction without knowing of
-- it. A row whose chains all left the spend states stays, at 0.
CREATE TABLE campaign_spend (
    campaign_id TEXT    NOT NULL,
    day         INTEGER NOT NULL,
    spent_cents INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, day)
) STRICT, WITHOUT ROWID;

INSERT INTO campaign_spend (campaign_id, day, spent_cents)
SELECT campaign_id, installed_at - installed_at % 86400000000, sum(price_cents) FROM chains
WHERE installed_at > 0 AND state IN ('installed', 'activated_48h', 'cleared')
GROUP BY 1, 2;

-- The WHEN clauses keep the triggers off every row whose spend does not
-- change (a click, a heartbeat, a clear: activated_48h to cleared stays in
-- the spend states). An update that moves a counted chain (campaign, price
-- or install time changed) takes it out of one row and into another.
-- +goose StatementBegin
CREATE TRIGGER chains_spend_insert AFTER INSERT ON chains
WHEN NEW.installed_at > 0 AND NEW.state IN ('installed', 'activated_48h', 'cleared')
BEGIN
    INSERT INTO campaign_spend (campaign_id, day, spent_cents)
    VALUES (NEW.campaign_id, NEW.installed_at - NEW.installed_at % 86400000000, NEW.price_cents)
    ON CONFLICT (campaign_id, day) DO UPDATE SET spent_cents = spent_cents + excluded.spent_cents;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER chains_spend_leave AFTER UPDATE ON chains
WHEN OLD.installed_at > 0 AND OLD.state IN ('installed', 'activated_48h', 'cleared')
 AND (NOT (NEW.installed_at > 0 AND NEW.state IN ('installed', 'activated_48h', 'cleared'))
      OR OLD.campaign_id IS NOT NEW.campaign_id OR OLD.price_cents IS NOT NEW.price_cents OR OLD.installed_at IS NOT NEW.installed_at)
BEGIN
    UPDATE campaign_spend SET spent_cents = spent_cents - OLD.price_cents
    WHERE campaign_id = OLD.campaign_id AND day = OLD.installed_at - OLD.installed_at % 86400000000;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER chains_spend_enter AFTER UPDATE ON chains
WHEN NEW.installed_at > 0 AND NEW.state IN ('installed', 'activated_48h', 'cleared')
 AND (NOT (OLD.installed_at > 0 AND OLD.state IN ('installed', 'activated_48h', 'cleared'))
      OR OLD.campaign_id IS NOT NEW.campaign_id OR OLD.price_cents IS NOT NEW.price_cents OR OLD.installed_at IS NOT NEW.installed_at)
BEGIN
    INSERT INTO campaign_spend (campaign_id, day, spent_cents)
    VALUES (NEW.campaign_id, NEW.installed_at - NEW.installed_at % 86400000000, NEW.price_cents)
    ON CONFLICT (campaign_id, day) DO UPDATE SET spent_cents = spent_cents + excluded.spent_cents;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chains_spend_enter;
DROP TRIGGER chains_spend_leave;
DROP TRIGGER chains_spend_insert;
DROP TABLE campaign_spend;
