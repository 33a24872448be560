-- +goose Up
-- Payments: checkout sessions (top-ups), payouts and payout accounts. These
-- are state tables (a session completes, a payout is sent), not ledger
-- history: the money itself is only ever in the ledger. Rows are never
-- deleted.

-- A top-up through a provider's checkout. completed ⇔ credited: the ledger
-- operation that credited the wallet is recorded with the status, in the
-- same transaction.
CREATE TABLE checkout_sessions (
    id           TEXT    PRIMARY KEY,
    app_id       TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    status       TEXT    NOT NULL CHECK (status IN ('open', 'completed', 'expired')),
    provider     TEXT    NOT NULL,
    provider_ref TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    completed_at INTEGER,
    operation_id TEXT,
    CHECK ((status = 'completed') = (completed_at IS NOT NULL AND operation_id IS NOT NULL))
) STRICT;
CREATE UNIQUE INDEX checkout_sessions_provider_ref ON checkout_sessions (provider, provider_ref);
CREATE INDEX checkout_sessions_app ON checkout_sessions (app_id, created_at);

-- A payout. At most one pending payout per app: the partial unique index is
-- what makes a second concurrent payout impossible.
CREATE TABLE payouts (
    id           TEXT    PRIMARY KEY,
    app_id       TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    destination  TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    transfer_id  TEXT,
    operation_id TEXT,
    failure      TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    CHECK (status <> 'sent' OR (transfer_id IS NOT NULL AND operation_id IS NOT NULL))
) STRICT;
CREATE UNIQUE INDEX payouts_one_pending ON payouts (app_id) WHERE status = 'pending';
CREATE INDEX payouts_app ON payouts (app_id, created_at);

-- The connected account an app's payouts go to, set by an operator.
CREATE TABLE payout_accounts (
    app_id     TEXT    PRIMARY KEY,
    account_id TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- +goose StatementBegin
CREATE TRIGGER checkout_sessions_no_delete BEFORE DELETE ON checkout_sessions BEGIN SELECT RAISE(ABORT, 'checkout_sessions rows are never deleted'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER payouts_no_delete BEFORE DELETE ON payouts BEGIN SELECT RAISE(ABORT, 'payouts rows are never deleted'); END;
-- +goose StatementEnd

-- No Down migration: these are money records.
