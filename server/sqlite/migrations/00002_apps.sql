-- +goose Up
-- Apps, their API keys, status history, background jobs and the operator
-- audit log. Times are microseconds since the Unix epoch (UTC).

CREATE TABLE apps (
    id            TEXT    PRIMARY KEY,
    name          TEXT    NOT NULL,
    platform      TEXT    NOT NULL CHECK (platform IN ('mac', 'win')),
    bundle_id     TEXT    NOT NULL,
    domain        TEXT    NOT NULL,
    download_url  TEXT    NOT NULL,
    contact_email TEXT    NOT NULL,
    category      TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'throttled', 'live', 'suspended', 'rejected')),
    earn_mode     TEXT    NOT NULL DEFAULT 'cash' CHECK (earn_mode IN ('cash', 'credits')),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) STRICT;

-- Only the SHA-256 of a key is stored (hex); it is the primary key, so
-- authentication is one lookup in a clustered (WITHOUT ROWID) B-tree.
CREATE TABLE api_keys (
    key_hash   TEXT    PRIMARY KEY CHECK (length(key_hash) = 64 AND key_hash NOT GLOB '*[^0-9a-f]*'),
    app_id     TEXT    NOT NULL REFERENCES apps (id),
    prefix     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX api_keys_app ON api_keys (app_id);

-- Background work (scoring, vetting gate). result is a JSON document the
-- worker records.
CREATE TABLE jobs (
    id          TEXT    PRIMARY KEY,
    app_id      TEXT    NOT NULL REFERENCES apps (id),
    kind        TEXT    NOT NULL CHECK (kind IN ('scoring', 'gate')),
    status      TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    result      TEXT    CHECK (result IS NULL OR json_valid(result)),
    created_at  INTEGER NOT NULL,
    run_after   INTEGER NOT NULL,
    finished_at INTEGER
) STRICT;
CREATE INDEX jobs_app ON jobs (app_id, created_at);
CREATE INDEX jobs_queued ON jobs (run_after) WHERE status = 'queued';

-- Append-only: every status change of every app.
CREATE TABLE app_status_history (
    seq         INTEGER PRIMARY KEY,
    app_id      TEXT    NOT NULL REFERENCES apps (id),
    from_status TEXT,
    to_status   TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    at          INTEGER NOT NULL
) STRICT;
CREATE INDEX app_status_history_app ON app_status_history (app_id, seq);

-- Append-only: every operator action.
CREATE TABLE admin_audit (
    seq     INTEGER PRIMARY KEY,
    id      TEXT    NOT NULL UNIQUE,
    actor   TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    subject TEXT    NOT NULL,
    detail  TEXT    NOT NULL CHECK (json_valid(detail)),
    at      INTEGER NOT NULL
) STRICT;

-- The append-only guards, as for the ledger (00001_ledger.sql): UPDATE and
-- DELETE abort, and a BEFORE INSERT guard refuses INSERT OR REPLACE.
-- +goose StatementBegin
CREATE TRIGGER app_status_history_no_update BEFORE UPDATE ON app_status_history BEGIN SELECT RAISE(ABORT, 'app_status_history is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER app_status_history_no_delete BEFORE DELETE ON app_status_history BEGIN SELECT RAISE(ABORT, 'app_status_history is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER app_status_history_no_replace BEFORE INSERT ON app_status_history
WHEN EXISTS (SELECT 1 FROM app_status_history WHERE seq = NEW.seq)
BEGIN SELECT RAISE(ABORT, 'app_status_history is append-only: REPLACE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER admin_audit_no_update BEFORE UPDATE ON admin_audit BEGIN SELECT RAISE(ABORT, 'admin_audit is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER admin_audit_no_delete BEFORE DELETE ON admin_audit BEGIN SELECT RAISE(ABORT, 'admin_audit is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER admin_audit_no_replace BEFORE INSERT ON admin_audit
WHEN EXISTS (SELECT 1 FROM admin_audit WHERE seq = NEW.seq OR id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'admin_audit is append-only: REPLACE blocked'); END;
-- +goose StatementEnd
