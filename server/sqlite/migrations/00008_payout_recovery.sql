-- +goose Up
-- Payouts that reserve and recover (docs/payments.md, "Payout").

-- The Idempotency-Key of the request that created a payout (scope and
-- stored key, both NULL without one): a retry with the key answers from its
-- payout, and the unique index makes a second payout under one key
-- impossible.
ALTER TABLE payouts ADD COLUMN idempotency_scope TEXT;
ALTER TABLE payouts ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX payouts_idempotency ON payouts (idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- What the recovery pass claims: pending payouts, least recently touched
-- first.
CREATE INDEX payouts_pending ON payouts (updated_at) WHERE status = 'pending';

-- A payout left pending by an earlier version reserved nothing in the
-- ledger, and those versions only ran in test mode, where no money moves and
-- the test provider kept its transfers in memory: fail it, so the app can
-- ask again.
UPDATE payouts SET status = 'failed',
    failure = 'abandoned: pending when payouts started reserving (migration 00008); no money had moved (test mode)',
    updated_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000000
WHERE status = 'pending';

-- Transfers of the test provider (test mode), by idempotency key: recorded
-- like a real processor's, so they outlive the process and the recovery
-- pass can ask about them after a crash.
CREATE TABLE test_transfers (
    idempotency_key TEXT    PRIMARY KEY,
    transfer_id     TEXT    NOT NULL UNIQUE,
    payout_id       TEXT    NOT NULL,
    app_id          TEXT    NOT NULL,
    destination     TEXT    NOT NULL,
    amount_cents    INTEGER NOT NULL CHECK (amount_cents > 0),
    currency        TEXT    NOT NULL,
    created_at      INTEGER NOT NULL
) STRICT;

-- +goose StatementBegin
CREATE TRIGGER test_transfers_no_delete BEFORE DELETE ON test_transfers BEGIN SELECT RAISE(ABORT, 'test_transfers rows are never deleted'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER test_transfers_no_update BEFORE UPDATE ON test_transfers BEGIN SELECT RAISE(ABORT, 'test_transfers rows are never updated'); END;
-- +goose StatementEnd

-- No Down migration: these are money records.
