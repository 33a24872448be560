-- +goose Up
-- wallet_totals: each wallet's ledger lines summed by type and earn mode,
-- which is what a payout may take (payments.Withdrawable: cash earnings −
-- payouts − cash clawbacks) and what GET /v1/apps/{app_id}/balance shows.
-- Summing the lines on each read grew with the wallet's history: at full
-- scale (BENCHMARKS.md, "A year of history") a wallet has 3,500 lines after
-- five months, and the GROUP BY read 2,770 heap pages, 171 ms cold. Here a
-- read is the wallet's few rows (one per type and mode it has used).
--
-- Kept exact by a statement trigger on ledger_lines, in the transaction that
-- writes the lines (ledger lines are append-only: no update or delete to
-- follow). Every writer of a wallet's lines holds the wallet's
-- ledger_accounts row (ledger.Apply locks the accounts of its operations), so
-- these upserts never wait on another transaction. Only wallets are kept:
-- no reader sums another account's lines. server/storetest WalletTotals
-- compares them with the lines after random operations.
CREATE TABLE wallet_totals (
    account_id text COLLATE "C" NOT NULL,
    type       text COLLATE "C" NOT NULL,
    earn_mode  text COLLATE "C" NOT NULL, -- '' for lines without one
    amount     bigint           NOT NULL,
    count      bigint           NOT NULL,
    PRIMARY KEY (account_id, type, earn_mode)
);
REVOKE ALL ON wallet_totals FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON wallet_totals TO xpromo_app;

INSERT INTO wallet_totals (account_id, type, earn_mode, amount, count)
SELECT account_id, type, coalesce(earn_mode, ''), sum(amount), count(*)
FROM ledger_lines WHERE account_id LIKE 'wallet:%' GROUP BY 1, 2, 3;

-- +goose StatementBegin
CREATE FUNCTION wallet_totals_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO wallet_totals AS t (account_id, type, earn_mode, amount, count)
    SELECT n.account_id, n.type, coalesce(n.earn_mode, ''), sum(n.amount), count(*)
    FROM new_lines n WHERE n.account_id LIKE 'wallet:%'
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (account_id, type, earn_mode) DO UPDATE SET amount = t.amount + excluded.amount, count = t.count + excluded.count;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER ledger_lines_wallet_totals AFTER INSERT ON ledger_lines REFERENCING NEW TABLE AS new_lines
    FOR EACH STATEMENT EXECUTE FUNCTION wallet_totals_add();
-- Fired whatever session_replication_role says, as the ledger's other
-- triggers are (00032): the totals must follow every line.
ALTER TABLE ledger_lines ENABLE ALWAYS TRIGGER ledger_lines_wallet_totals;

-- +goose Down
DROP TRIGGER ledger_lines_wallet_totals ON ledger_lines;
DROP FUNCTION wallet_totals_add();
DROP TABLE wallet_totals;
