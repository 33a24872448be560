-- +goose Up
-- Attribution (docs/attribution.md): SDK keys, chains, the outbox of chain
-- events, and per-day fill counters. A NULL time means "not yet".

-- An app's SDK public keys. kid is derived from the key (sdk/attribution
-- KeyID), so it is unique across apps. Keys are revoked, never deleted.
CREATE TABLE sdk_keys (
    kid        text COLLATE "C" PRIMARY KEY,
    app_id     text COLLATE "C" NOT NULL REFERENCES apps (id),
    public_key bytea            NOT NULL CHECK (length(public_key) = 32),
    created_at timestamptz      NOT NULL,
    revoked_at timestamptz      NULL
);
CREATE INDEX sdk_keys_app ON sdk_keys (app_id, created_at);

-- A chain: one click and what followed it, or the record of a claim refused
-- before it was authenticated (nonce NULL, claimed_nonce set). The unique
-- nonce is what makes a click token single use: INSERT … ON CONFLICT (nonce)
-- DO NOTHING is the atomic single-use insert.
CREATE TABLE chains (
    id                text COLLATE "C" PRIMARY KEY,
    nonce             text COLLATE "C" NULL,
    claimed_nonce     text COLLATE "C" NULL,
    state             text COLLATE "C" NOT NULL CHECK (state IN ('clicked', 'installed', 'activated_48h', 'cleared', 'refunded', 'rejected')),
    reason            text COLLATE "C" NOT NULL DEFAULT '',
    campaign_id       text COLLATE "C" NOT NULL DEFAULT '',
    publisher_app_id  text COLLATE "C" NOT NULL DEFAULT '',
    advertiser_app_id text COLLATE "C" NOT NULL DEFAULT '',
    category          text COLLATE "C" NOT NULL DEFAULT '',
    platform          text COLLATE "C" NOT NULL DEFAULT '',
    price_cents       bigint           NOT NULL DEFAULT 0 CHECK (price_cents >= 0),
    offered_at        timestamptz      NULL,
    clicked_at        timestamptz      NULL,
    expires_at        timestamptz      NULL,
    click_token       text             NOT NULL DEFAULT '',
    token_hash        text COLLATE "C" NOT NULL DEFAULT '',
    publisher_kid     text COLLATE "C" NOT NULL DEFAULT '',
    countersignature  text             NOT NULL DEFAULT '',
    advertiser_kid    text COLLATE "C" NOT NULL DEFAULT '',
    device_id         text COLLATE "C" NOT NULL DEFAULT '',
    claimed_at        timestamptz      NULL,
    click_ip          text COLLATE "C" NOT NULL DEFAULT '',
    install_ip        text COLLATE "C" NOT NULL DEFAULT '',
    install_asn       bigint           NOT NULL DEFAULT 0,
    installed_at      timestamptz      NULL,
    activated_at      timestamptz      NULL,
    resolved_at       timestamptz      NULL,
    heartbeat_seq     bigint           NOT NULL DEFAULT 0,
    last_heartbeat_at timestamptz      NULL,
    created_at        timestamptz      NOT NULL,
    updated_at        timestamptz      NOT NULL,
    CONSTRAINT chains_nonce_key UNIQUE (nonce),
    CHECK ((state IN ('rejected', 'refunded')) = (reason <> '')),
    CHECK (nonce IS NOT NULL OR state = 'rejected')
);
-- Heartbeats find their chain by the click token's hash.
CREATE INDEX chains_token_hash ON chains (token_hash) WHERE nonce IS NOT NULL;
-- The sweep's due chains (small partial indexes: few chains are due).
CREATE INDEX chains_due_activated ON chains (activated_at) WHERE state = 'activated_48h';
CREATE INDEX chains_due_installed ON chains (installed_at) WHERE state = 'installed';
-- Budget (today's spend of a campaign) and the fraud rules' lookups.
CREATE INDEX chains_campaign_installed ON chains (campaign_id, installed_at) WHERE installed_at IS NOT NULL;
CREATE INDEX chains_advertiser_device ON chains (advertiser_app_id, device_id) WHERE installed_at IS NOT NULL;
CREATE INDEX chains_device_installed ON chains (device_id, installed_at) WHERE installed_at IS NOT NULL;
CREATE INDEX chains_ip_installed ON chains (install_ip, installed_at) WHERE installed_at IS NOT NULL;
-- Stats, per advertiser and over the network.
CREATE INDEX chains_advertiser_created ON chains (advertiser_app_id, created_at);
CREATE INDEX chains_created ON chains (created_at);

-- The transactional outbox: events written in the transaction of the state
-- change they announce, delivered (as webhooks) by a worker that sets
-- delivered_at.
CREATE TABLE outbox (
    id           text COLLATE "C" PRIMARY KEY,
    kind         text COLLATE "C" NOT NULL,
    app_id       text COLLATE "C" NOT NULL,
    payload      jsonb            NOT NULL,
    created_at   timestamptz      NOT NULL,
    delivered_at timestamptz      NULL
);
CREATE INDEX outbox_pending ON outbox (created_at) WHERE delivered_at IS NULL;
CREATE INDEX outbox_app ON outbox (app_id, created_at);

-- Fills (creatives served) per UTC day, campaign and publisher app, added
-- to in batches by each server (INSERT … ON CONFLICT DO UPDATE count + n).
CREATE TABLE fill_counts (
    day               date             NOT NULL,
    campaign_id       text COLLATE "C" NOT NULL,
    advertiser_app_id text COLLATE "C" NOT NULL,
    publisher_app_id  text COLLATE "C" NOT NULL,
    count             bigint           NOT NULL CHECK (count >= 0),
    PRIMARY KEY (day, campaign_id, publisher_app_id)
);
CREATE INDEX fill_counts_advertiser ON fill_counts (advertiser_app_id, day);

-- Chains are evidence: their state changes, but the application never
-- deletes one (no DELETE or TRUNCATE privilege). The outbox and fill
-- counters are updated in place.
REVOKE ALL ON sdk_keys, chains, outbox, fill_counts FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON sdk_keys, chains, outbox, fill_counts TO xpromo_app;

-- No Down migration: chains hold money's evidence.
