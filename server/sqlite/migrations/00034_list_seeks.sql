-- +goose Up
-- A ledger page is a keyset range on (account_id, seq) whose date bounds
-- are found by a seek on this index: the first line of the account at or
-- after the date, ties in sequence order (server/*/reader.go linesQuery).
-- It replaces (account_id, created_at), which it covers for every other
-- reader of an account's lines by time.
CREATE INDEX ledger_lines_account_time_seq ON ledger_lines (account_id, created_at, seq);
DROP INDEX ledger_lines_account_time;

-- +goose Down
CREATE INDEX ledger_lines_account_time ON ledger_lines (account_id, created_at);
DROP INDEX ledger_lines_account_time_seq;
