-- +goose Up
-- Idempotency-Keys (docs/limits.md). Not append-only: a key is claimed
-- (in_progress), then finished with the response to replay (done) or
-- released (deleted), and rows are purged once expired; the application
-- role therefore may update and delete them.
CREATE TABLE idempotency_keys (
    scope        text COLLATE "C" NOT NULL, -- "app:<app_id>", "ip:<client ip>" or "admin"
    key          text COLLATE "C" NOT NULL,
    claim        text COLLATE "C" NOT NULL, -- random id of the claim holding the row
    fingerprint  bytea            NOT NULL, -- sha256 of method, path and body
    state        text COLLATE "C" NOT NULL CHECK (state IN ('in_progress', 'done')),
    status       integer          NOT NULL DEFAULT 0,
    content_type text             NOT NULL DEFAULT '',
    headers      text             NOT NULL DEFAULT '{}', -- JSON object of replayed headers
    body         bytea            NOT NULL DEFAULT '',
    created_at   timestamptz      NOT NULL, -- when the claim was taken
    expires_at   timestamptz      NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_keys TO xpromo_app;

-- +goose Down
DROP TABLE idempotency_keys;
