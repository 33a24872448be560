-- +goose Up
-- The server instance running an in_progress claim (docs/limits.md,
-- "Holders"): a claim whose holder is known dead (its advisory lock is
-- free) is taken over at once instead of waiting out its lease. '' on rows
-- claimed before this column.
ALTER TABLE idempotency_keys ADD COLUMN holder text COLLATE "C" NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN holder;
