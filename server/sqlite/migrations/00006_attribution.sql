-- +goose Up
-- Attribution (docs/attribution.md): SDK keys, chains, the outbox of chain
-- events, and per-day fill counters. Times are microseconds since the Unix
-- epoch (UTC); 0 in an optional time column means "not yet".

-- An app's SDK public keys. kid is derived from the key (sdk/attribution
-- KeyID), so it is unique across apps. Keys are revoked, never deleted.
CREATE TABLE sdk_keys (
    kid        TEXT    PRIMARY KEY,
    app_id     TEXT    NOT NULL REFERENCES apps (id),
    public_key BLOB    NOT NULL CHECK (length(public_key) = 32),
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;
CREATE INDEX sdk_keys_app ON sdk_keys (app_id, created_at);

-- A chain: one click and what followed it, or the record of a claim refused
-- before it was authenticated (nonce NULL, claimed_nonce set). The unique
-- nonce is what makes a click token single use.
CREATE TABLE chains (
    id                TEXT    PRIMARY KEY,
    nonce             TEXT    UNIQUE,
    claimed_nonce     TEXT,
    state             TEXT    NOT NULL CHECK (state IN ('clicked', 'installed', 'activated_48h', 'cleared', 'refunded', 'rejected')),
    reason            TEXT    NOT NULL DEFAULT '',
    campaign_id       TEXT    NOT NULL DEFAULT '',
    publisher_app_id  TEXT    NOT NULL DEFAULT '',
    advertiser_app_id TEXT    NOT NULL DEFAULT '',
    category          TEXT    NOT NULL DEFAULT '',
    platform          TEXT    NOT NULL DEFAULT '',
    price_cents       INTEGER NOT NULL DEFAULT 0 CHECK (price_cents >= 0),
    offered_at        INTEGER NOT NULL DEFAULT 0,
    clicked_at        INTEGER NOT NULL DEFAULT 0,
    expires_at        INTEGER NOT NULL DEFAULT 0,
    click_token       TEXT    NOT NULL DEFAULT '',
    token_hash        TEXT    NOT NULL DEFAULT '',
    publisher_kid     TEXT    NOT NULL DEFAULT '',
    countersignature  TEXT    NOT NULL DEFAULT '',
    advertiser_kid    TEXT    NOT NULL DEFAULT '',
    device_id         TEXT    NOT NULL DEFAULT '',
    claimed_at        INTEGER NOT NULL DEFAULT 0,
    click_ip          TEXT    NOT NULL DEFAULT '',
    install_ip        TEXT    NOT NULL DEFAULT '',
    install_asn       INTEGER NOT NULL DEFAULT 0,
    installed_at      INTEGER NOT NULL DEFAULT 0,
    activated_at      INTEGER NOT NULL DEFAULT 0,
    resolved_at       INTEGER NOT NULL DEFAULT 0,
    heartbeat_seq     INTEGER NOT NULL DEFAULT 0,
    last_heartbeat_at INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    CHECK ((state IN ('rejected', 'refunded')) = (reason <> '')),
    CHECK (nonce IS NOT NULL OR state = 'rejected')
) STRICT;
-- Heartbeats find their chain by the click token's hash.
CREATE INDEX chains_token_hash ON chains (token_hash) WHERE nonce IS NOT NULL;
-- The sweep's due chains.
CREATE INDEX chains_due_activated ON chains (activated_at) WHERE state = 'activated_48h';
CREATE INDEX chains_due_installed ON chains (installed_at) WHERE state = 'installed';
-- Budget (today's spend of a campaign) and the fraud rules' lookups.
CREATE INDEX chains_campaign_installed ON chains (campaign_id, installed_at) WHERE installed_at > 0;
CREATE INDEX chains_advertiser_device ON chains (advertiser_app_id, device_id) WHERE installed_at > 0;
CREATE INDEX chains_device_installed ON chains (device_id, installed_at) WHERE installed_at > 0;
CREATE INDEX chains_ip_installed ON chains (install_ip, installed_at) WHERE installed_at > 0;
-- Stats, per advertiser and over the network.
CREATE INDEX chains_advertiser_created ON chains (advertiser_app_id, created_at);
CREATE INDEX chains_created ON chains (created_at);

-- Chains are evidence: their state changes, but they are never deleted.
-- +goose StatementBegin
CREATE TRIGGER chains_no_delete BEFORE DELETE ON chains BEGIN SELECT RAISE(ABORT, 'chains rows are never deleted'); END;
-- +goose StatementEnd

-- The transactional outbox: events written in the transaction of the state
-- change they announce, delivered (as webhooks) by a worker that sets
-- delivered_at.
CREATE TABLE outbox (
    id           TEXT    PRIMARY KEY,
    kind         TEXT    NOT NULL,
    app_id       TEXT    NOT NULL,
    payload      TEXT    NOT NULL CHECK (json_valid(payload)),
    created_at   INTEGER NOT NULL,
    delivered_at INTEGER
) STRICT;
CREATE INDEX outbox_pending ON outbox (created_at) WHERE delivered_at IS NULL;
CREATE INDEX outbox_app ON outbox (app_id, created_at);

-- Fills (creatives served) per UTC day, campaign and publisher app, added
-- to in batches by each server.
CREATE TABLE fill_counts (
    day               INTEGER NOT NULL, -- microseconds of the day's midnight UTC
    campaign_id       TEXT    NOT NULL,
    advertiser_app_id TEXT    NOT NULL,
    publisher_app_id  TEXT    NOT NULL,
    count             INTEGER NOT NULL CHECK (count >= 0),
    PRIMARY KEY (day, campaign_id, publisher_app_id)
) STRICT;
CREATE INDEX fill_counts_advertiser ON fill_counts (advertiser_app_id, day);

-- No Down migration: chains hold money's evidence.
