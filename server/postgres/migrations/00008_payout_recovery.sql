-- +goose Up
-- Payouts that reserve and recover (docs/payments.md, "Payout").

-- The Idempotency-Key of the request that created a payout (scope and
-- stored key, both NULL without one): a retry with the key answers from its
-- payout, and the unique index makes a second payout under one key
-- impossible.
ALTER TABLE payouts ADD COLUMN idempotency_scope text COLLATE "C" NULL;
ALTER TABLE payouts ADD COLUMN idempotency_key   text COLLATE "C" NULL;
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
    updated_at = now()
WHERE status = 'pending';

-- Transfers of the test provider (test mode), by idempotency key: recorded
-- like a real processor's, so they outlive the process and the recovery
-- pass can ask about them after a crash.
CREATE TABLE test_transfers (
    idempotency_key text COLLATE "C" PRIMARY KEY,
    transfer_id     text COLLATE "C" NOT NULL UNIQUE,
    payout_id       text COLLATE "C" NOT NULL,
    app_id          text COLLATE "C" NOT NULL,
    destination     text COLLATE "C" NOT NULL,
    amount_cents    bigint           NOT NULL CHECK (amount_cents > 0),
    currency        text COLLATE "C" NOT NULL,
    created_at      timestamptz      NOT NULL
);

REVOKE ALL ON test_transfers FROM PUBLIC;
GRANT SELECT, INSERT ON test_transfers TO xpromo_app;

-- No Down migration: these are money records.
