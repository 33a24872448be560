-- +goose Up
-- Payments: checkout sessions (top-ups), payouts and payout accounts. These
-- are state tables (a session completes, a payout is sent), not ledger
-- history: the money itself is only ever in the ledger. The application may
-- read, insert and update them, never delete.

-- A top-up through a provider's checkout. completed ⇔ credited: the ledger
-- operation that credited the wallet is recorded with the status, in the
-- same transaction.
CREATE TABLE checkout_sessions (
    id           text COLLATE "C" PRIMARY KEY,
    app_id       text COLLATE "C" NOT NULL,
    amount_cents bigint           NOT NULL CHECK (amount_cents > 0),
    status       text COLLATE "C" NOT NULL CHECK (status IN ('open', 'completed', 'expired')),
    provider     text COLLATE "C" NOT NULL,
    provider_ref text COLLATE "C" NOT NULL,
    created_at   timestamptz      NOT NULL,
    expires_at   timestamptz      NOT NULL,
    completed_at timestamptz      NULL,
    operation_id text COLLATE "C" NULL,
    CHECK ((status = 'completed') = (completed_at IS NOT NULL AND operation_id IS NOT NULL))
);
CREATE UNIQUE INDEX checkout_sessions_provider_ref ON checkout_sessions (provider, provider_ref);
CREATE INDEX checkout_sessions_app ON checkout_sessions (app_id, created_at);

-- A payout. At most one pending payout per app: the partial unique index is
-- what makes a second concurrent payout impossible.
CREATE TABLE payouts (
    id           text COLLATE "C" PRIMARY KEY,
    app_id       text COLLATE "C" NOT NULL,
    amount_cents bigint           NOT NULL CHECK (amount_cents > 0),
    destination  text COLLATE "C" NOT NULL,
    status       text COLLATE "C" NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    transfer_id  text COLLATE "C" NULL,
    operation_id text COLLATE "C" NULL,
    failure      text             NULL,
    created_at   timestamptz      NOT NULL,
    updated_at   timestamptz      NOT NULL,
    CHECK (status <> 'sent' OR (transfer_id IS NOT NULL AND operation_id IS NOT NULL))
);
CREATE UNIQUE INDEX payouts_one_pending ON payouts (app_id) WHERE status = 'pending';
CREATE INDEX payouts_app ON payouts (app_id, created_at);

-- The connected account an app's payouts go to, set by an operator.
CREATE TABLE payout_accounts (
    app_id     text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL,
    created_at timestamptz      NOT NULL,
    updated_at timestamptz      NOT NULL
);

REVOKE ALL ON checkout_sessions, payouts, payout_accounts FROM PUBLIC;
-- UPDATE also lets the store lock a session row (SELECT … FOR UPDATE).
GRANT SELECT, INSERT, UPDATE ON checkout_sessions, payouts, payout_accounts TO xpromo_app;

-- No Down migration: these are money records.
