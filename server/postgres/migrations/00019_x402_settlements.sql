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
    id           text COLLATE "C" PRIMARY KEY,
    app_id       text COLLATE "C" NOT NULL,
    network      text COLLATE "C" NOT NULL,
    asset        text COLLATE "C" NOT NULL,
    payer        text COLLATE "C" NOT NULL,
    nonce        text COLLATE "C" NOT NULL,
    value        text COLLATE "C" NOT NULL,
    amount_cents bigint           NOT NULL CHECK (amount_cents > 0),
    valid_before timestamptz      NOT NULL,
    payment      text             NOT NULL,
    requirements text             NOT NULL,
    status       text COLLATE "C" NOT NULL CHECK (status IN ('pending', 'settled', 'failed')),
    tx_hash      text COLLATE "C" NOT NULL DEFAULT '',
    operation_id text COLLATE "C" NOT NULL DEFAULT '',
    failure      text             NOT NULL DEFAULT '',
    created_at   timestamptz      NOT NULL,
    updated_at   timestamptz      NOT NULL,
    CHECK (status <> 'settled' OR operation_id <> '')
);
CREATE UNIQUE INDEX x402_settlements_authorization ON x402_settlements (network, asset, payer, nonce);
CREATE INDEX x402_settlements_pending ON x402_settlements (updated_at) WHERE status = 'pending';

-- The quotes of challenges, when the EUR→USD rate comes from a rate source
-- (--x402-rate-url): a paid retry must pay exactly the value of an
-- unexpired quote given to its app for its amount.
CREATE TABLE x402_quotes (
    id           text COLLATE "C" PRIMARY KEY,
    app_id       text COLLATE "C" NOT NULL,
    amount_cents bigint           NOT NULL CHECK (amount_cents > 0),
    value        text COLLATE "C" NOT NULL,
    rate         text COLLATE "C" NOT NULL,
    created_at   timestamptz      NOT NULL,
    expires_at   timestamptz      NOT NULL
);
CREATE INDEX x402_quotes_lookup ON x402_quotes (app_id, amount_cents, value, expires_at);

CREATE TRIGGER x402_settlements_no_delete BEFORE DELETE ON x402_settlements FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
ALTER TABLE x402_settlements ENABLE ALWAYS TRIGGER x402_settlements_no_delete;

REVOKE ALL ON x402_settlements, x402_quotes FROM PUBLIC;
-- UPDATE also lets the store lock a row (SELECT … FOR UPDATE).
GRANT SELECT, INSERT, UPDATE ON x402_settlements TO xpromo_app;
GRANT SELECT, INSERT ON x402_quotes TO xpromo_app;

-- No Down migration: these are money records.
