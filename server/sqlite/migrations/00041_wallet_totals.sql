-- +goose Up
-- wallet_totals: each wallet's ledger lines summed by type and earn mode,
-- what payouts and GET /v1/apps/{app_id}/balance read instead of summing
-- the wallet's whole history (PostgreSQL's 00041: read its comments). Kept by
-- a row trigger on ledger_lines (append-only), in the writer's transaction.
CREATE TABLE wallet_totals (
    account_id TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    earn_mode  TEXT    NOT NULL, -- '' for lines without one
    amount     INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    PRIMARY KEY (account_id, type, earn_mode)
) WITHOUT ROWID;

INSERT INTO wallet_totals (account_id, type, earn_mode, amount, count)
SELECT account_id, type, coalesce(earn_mode, ''), sum(amount), count(*)
FROM ledger_lines WHERE account_id LIKE 'wallet:%' GROUP BY 1, 2, 3;

-- +goose StatementBegin
CREATE TRIGGER ledger_lines_wallet_totals AFTER INSERT ON ledger_lines
WHEN NEW.account_id LIKE 'wallet:%'
BEGIN
    INSERT INTO wallet_totals (account_id, type, earn_mode, amount, count)
    VALUES (NEW.account_id, NEW.type, coalesce(NEW.earn_mode, ''), NEW.amount, 1)
    ON CONFLICT (account_id, type, earn_mode) DO UPDATE SET amount = amount + excluded.amount, count = count + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER ledger_lines_wallet_totals;
DROP TABLE wallet_totals;
