-- +goose Up
-- Webhooks (docs/webhooks.md): endpoints, the delivery queue, the record of
-- attempts. The outbox becomes the 30-day event log: dispatched_at is when
-- the worker fanned an event out to the deliveries of its app's endpoints.

ALTER TABLE outbox RENAME COLUMN delivered_at TO dispatched_at;
-- The events API pages an app's events by (created_at, id); the purge finds
-- events older than 30 days by created_at.
DROP INDEX outbox_app;
CREATE INDEX outbox_app ON outbox (app_id, created_at, id);
CREATE INDEX outbox_created ON outbox (created_at);

-- An app's endpoints. The secret signs deliveries; after a rotation the
-- previous secret signs alongside it until previous_secret_expires_at.
CREATE TABLE webhook_endpoints (
    id                         text COLLATE "C" PRIMARY KEY,
    app_id                     text COLLATE "C" NOT NULL REFERENCES apps (id),
    url                        text             NOT NULL,
    events                     text[]           NOT NULL,
    description                text             NOT NULL DEFAULT '',
    status                     text COLLATE "C" NOT NULL CHECK (status IN ('enabled', 'disabled')),
    disabled_reason            text COLLATE "C" NULL CHECK (disabled_reason IN ('by_request', 'gone', 'failing')),
    disabled_at                timestamptz      NULL,
    secret                     text             NOT NULL,
    previous_secret            text             NULL,
    previous_secret_expires_at timestamptz      NULL,
    created_at                 timestamptz      NOT NULL,
    updated_at                 timestamptz      NOT NULL,
    CHECK ((status = 'disabled') = (disabled_reason IS NOT NULL))
);
CREATE INDEX webhook_endpoints_app ON webhook_endpoints (app_id, created_at);

-- The delivery queue: one row per event and endpoint until it is delivered
-- (or dropped with a disabled endpoint). next_attempt_at is when the row is
-- due; a worker's claim moves it to the end of its lease, so a worker that
-- dies mid-delivery leaves the row due again when the lease runs out, and
-- the value is the claim's token when the worker records the result.
CREATE TABLE webhook_deliveries (
    endpoint_id      text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id         text COLLATE "C" NOT NULL,
    app_id           text COLLATE "C" NOT NULL,
    event_created_at timestamptz      NOT NULL,
    attempts         integer          NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  timestamptz      NOT NULL,
    PRIMARY KEY (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, event_created_at, event_id);
CREATE INDEX webhook_deliveries_event_created ON webhook_deliveries (event_created_at);

-- Every attempt, kept 30 days.
CREATE TABLE webhook_attempts (
    id               text COLLATE "C" PRIMARY KEY,
    endpoint_id      text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id         text COLLATE "C" NOT NULL,
    app_id           text COLLATE "C" NOT NULL,
    attempt          integer          NOT NULL CHECK (attempt >= 1),
    attempted_at     timestamptz      NOT NULL,
    status_code      integer          NULL,
    latency_ms       bigint           NOT NULL CHECK (latency_ms >= 0),
    succeeded        boolean          NOT NULL,
    error            text COLLATE "C" NULL,
    response_excerpt text             NOT NULL DEFAULT '',
    next_attempt_at  timestamptz      NULL
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at DESC, id DESC);
CREATE INDEX webhook_attempts_attempted ON webhook_attempts (attempted_at);

-- The event log and the attempts are purged after 30 days; endpoints and
-- their queue are deleted by their app.
REVOKE ALL ON webhook_endpoints, webhook_deliveries, webhook_attempts FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints, webhook_deliveries, webhook_attempts TO xpromo_app;
GRANT DELETE ON outbox TO xpromo_app;

-- No Down migration: the rename is one way, like the migrations before it.
