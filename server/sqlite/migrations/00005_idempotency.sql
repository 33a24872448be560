-- +goose Up
-- Idempotency-Keys (docs/limits.md). Not append-only: a key is claimed
-- (in_progress), then finished with the response to replay (done) or
-- released (deleted), and rows are purged once expired.
CREATE TABLE idempotency_keys (
    scope        TEXT    NOT NULL, -- "app:<app_id>", "ip:<client ip>" or "admin"
    key          TEXT    NOT NULL,
    claim        TEXT    NOT NULL, -- random id of the claim holding the row
    fingerprint  BLOB    NOT NULL, -- sha256 of method, path and body
    state        TEXT    NOT NULL CHECK (state IN ('in_progress', 'done')),
    status       INTEGER NOT NULL DEFAULT 0,
    content_type TEXT    NOT NULL DEFAULT '',
    headers      TEXT    NOT NULL DEFAULT '{}', -- JSON object of replayed headers
    body         BLOB    NOT NULL DEFAULT x'',
    created_at   INTEGER NOT NULL, -- unix microseconds of the claim
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) STRICT;

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
