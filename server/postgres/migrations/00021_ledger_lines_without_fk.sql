-- +goose Up
-- Ledger lines lose their two foreign keys (to ledger_operations and to
-- ledger_accounts). Each was a per-row lookup and key-share lock at insert
-- time, about half of the cost of writing a line (BENCHMARKS.md, "Clearing:
-- less written per settlement"), and the sweep writes five lines per
-- settlement. What they guaranteed is still guaranteed:
--   - the ledger writes a line only inside Append, in the transaction that
--     inserts its operation and has locked (creating it if need be) its
--     account;
--   - `ledger verify` reports a line whose operation has no record, an
--     operation without lines and lines of an account without a head
--     (checks "operation" and "head"), as it reports a forged resolution,
--     which never had a foreign key (00001).
-- The append-only triggers and privileges are unchanged. SQLite keeps its
-- foreign keys: there they are an in-process B-tree probe, and dropping
-- them would mean copying the whole table.
ALTER TABLE ledger_lines
    DROP CONSTRAINT IF EXISTS ledger_lines_operation_id_fkey,
    DROP CONSTRAINT IF EXISTS ledger_lines_account_id_fkey;

-- No Down migration: the foreign keys are not needed back; verify checks
-- what they did.
