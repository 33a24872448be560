-- +goose Up
-- x402 top-ups (docs/payments.md "x402"): one row per payment authorization
-- offered, unique on the token's own replay key (network, asset, payer,
-- nonce), so an authorization credits a wallet at most once whatever the
-- retries and races. pending: claimed, its settlement under way or its
-- outcome unknown (the reconciliation pass resolves it); settled: the
-- transfer landed and the wallet was credited by operation_id in the same
-- transaction; failed: nothing moved (the authorization may be offered
-- again while valid). payment and requirements are the X-PAYMENT payload and
-- the server's requirements (JSON), kept so reconciliation can settle again.
CREATE TABLE x402_settlements (
    id           TEXT    PRIMARY KEY,
    app_id       TEXT    NOT NULL,
    network      TEXT    NOT NULL,
    asset        TEXT    NOT NULL,
    payer        TEXT    NOT NULL,
    nonce        TEXT    NOT NULL,
    value        TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    valid_before INTEGER NOT NULL,
    payment      TEXT    NOT NULL,
    requirements TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('pending', 'settled', 'failed')),
    tx_hash      TEXT    NOT NULL DEFAULT '',
    operation_id TEXT    NOT NULL DEFAULT '',
    failure      TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    CHECK (status <> 'settled' OR operation_id <> '')
) STRICT;
CREATE UNIQUE INDEX x402_settlements_authorization ON x402_settlements (network, asset, payer, nonce);
CREATE INDEX x402_settlements_pending ON x402_settlements (updated_at) WHERE status = 'pending';

-- The quotes of challenges, when the EUR→USD rate comes from a rate source
-- (--x402-rate-url): a paid retry must pay exactly the value of an
-- unexpired quote given to its app for its amount.
CREATE TABLE x402_quotes (
    id           TEXT    PRIMARY KEY,
    app_id       TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    value        TEXT    NOT NULL,
    rate         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX x402_quotes_lookup ON x402_quotes (app_id, amount_cents, value, expires_at);

-- +goose StatementBegin
CREATE TRIGGER x402_settlements_no_delete BEFORE DELETE ON x402_settlements BEGIN SELECT RAISE(ABORT, 'x402_settlements rows are never deleted'); END;
-- +goose StatementEnd

-- No Down migration: these are money records.
