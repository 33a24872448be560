-- +goose Up
-- Webhooks (docs/webhooks.md): endpoints, the delivery queue, the record of
-- attempts. The outbox becomes the 30-day event log: dispatched_at is when
-- the worker fanned an event out to the deliveries of its app's endpoints.
-- Times are microseconds since the Unix epoch (UTC).

ALTER TABLE outbox RENAME COLUMN delivered_at TO dispatched_at;
-- The events API pages an app's events by (created_at, id); the purge finds
-- events older than 30 days by created_at.
DROP INDEX outbox_app;
CREATE INDEX outbox_app ON outbox (app_id, created_at, id);
CREATE INDEX outbox_created ON outbox (created_at);

-- An app's endpoints. The secret signs deliveries; after a rotation the
-- previous secret signs alongside it until previous_secret_expires_at.
-- events is a JSON array of event types.
CREATE TABLE webhook_endpoints (
    id                         TEXT    PRIMARY KEY,
    app_id                     TEXT    NOT NULL REFERENCES apps (id),
    url                        TEXT    NOT NULL,
    events                     TEXT    NOT NULL CHECK (json_valid(events)),
    description                TEXT    NOT NULL DEFAULT '',
    status                     TEXT    NOT NULL CHECK (status IN ('enabled', 'disabled')),
    disabled_reason            TEXT    CHECK (disabled_reason IN ('by_request', 'gone', 'failing')),
    disabled_at                INTEGER,
    secret                     TEXT    NOT NULL,
    previous_secret            TEXT,
    previous_secret_expires_at INTEGER,
    created_at                 INTEGER NOT NULL,
    updated_at                 INTEGER NOT NULL,
    CHECK ((status = 'disabled') = (disabled_reason IS NOT NULL))
) STRICT;
CREATE INDEX webhook_endpoints_app ON webhook_endpoints (app_id, created_at);

-- The delivery queue: one row per event and endpoint until it is delivered
-- (or dropped with a disabled endpoint). next_attempt_at is when the row is
-- due; a worker's claim moves it to the end of its lease, so a worker that
-- dies mid-delivery leaves the row due again when the lease runs out, and
-- the value is the claim's token when the worker records the result.
CREATE TABLE webhook_deliveries (
    endpoint_id      TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id         TEXT    NOT NULL,
    app_id           TEXT    NOT NULL,
    event_created_at INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  INTEGER NOT NULL,
    PRIMARY KEY (endpoint_id, event_id)
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, event_created_at, event_id);
CREATE INDEX webhook_deliveries_event_created ON webhook_deliveries (event_created_at);

-- Every attempt, kept 30 days.
CREATE TABLE webhook_attempts (
    id               TEXT    PRIMARY KEY,
    endpoint_id      TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id         TEXT    NOT NULL,
    app_id           TEXT    NOT NULL,
    attempt          INTEGER NOT NULL CHECK (attempt >= 1),
    attempted_at     INTEGER NOT NULL,
    status_code      INTEGER,
    latency_ms       INTEGER NOT NULL CHECK (latency_ms >= 0),
    succeeded        INTEGER NOT NULL CHECK (succeeded IN (0, 1)),
    error            TEXT,
    response_excerpt TEXT    NOT NULL DEFAULT '',
    next_attempt_at  INTEGER
) STRICT;
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at DESC, id DESC);
CREATE INDEX webhook_attempts_attempted ON webhook_attempts (attempted_at);
