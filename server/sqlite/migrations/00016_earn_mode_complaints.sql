-- +goose Up
-- Earn mode changes (docs/apps.md "Earn mode"): apps.earn_mode is the mode
-- now; this append-only history says when each switch took effect. An app
-- that never switched has been in cash since its registration. Append-only
-- as app_status_history is: UPDATE, DELETE and INSERT OR REPLACE abort.
CREATE TABLE app_earn_mode_changes (
    seq       INTEGER PRIMARY KEY,
    app_id    TEXT    NOT NULL REFERENCES apps (id),
    from_mode TEXT    NOT NULL CHECK (from_mode IN ('cash', 'credits')),
    to_mode   TEXT    NOT NULL CHECK (to_mode IN ('cash', 'credits')),
    at        INTEGER NOT NULL
) STRICT;
CREATE INDEX app_earn_mode_changes_app ON app_earn_mode_changes (app_id, seq);

-- +goose StatementBegin
CREATE TRIGGER app_earn_mode_changes_no_update BEFORE UPDATE ON app_earn_mode_changes BEGIN SELECT RAISE(ABORT, 'app_earn_mode_changes is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER app_earn_mode_changes_no_delete BEFORE DELETE ON app_earn_mode_changes BEGIN SELECT RAISE(ABORT, 'app_earn_mode_changes is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER app_earn_mode_changes_no_replace BEFORE INSERT ON app_earn_mode_changes
WHEN EXISTS (SELECT 1 FROM app_earn_mode_changes WHERE seq = NEW.seq)
BEGIN SELECT RAISE(ABORT, 'app_earn_mode_changes is append-only: REPLACE blocked'); END;
-- +goose StatementEnd

-- Complaints (docs/apps.md "Complaints"): an app reports another; an
-- operator resolves it, upheld or dismissed. At most one open complaint per
-- (reporter, reported) pair.
CREATE TABLE complaints (
    id              TEXT    PRIMARY KEY,
    reporter_app_id TEXT    NOT NULL REFERENCES apps (id),
    app_id          TEXT    NOT NULL REFERENCES apps (id),
    reason          TEXT    NOT NULL CHECK (reason IN ('misleading_ad', 'malware', 'broken_install', 'fraud', 'other')),
    detail          TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL CHECK (status IN ('open', 'upheld', 'dismissed')),
    created_at      INTEGER NOT NULL,
    resolved_at     INTEGER,
    resolution_note TEXT    NOT NULL DEFAULT '',
    CHECK (reporter_app_id <> app_id),
    CHECK ((status = 'open') = (resolved_at IS NULL))
) STRICT;
CREATE UNIQUE INDEX complaints_one_open ON complaints (reporter_app_id, app_id) WHERE status = 'open';
CREATE INDEX complaints_reporter ON complaints (reporter_app_id, created_at);
CREATE INDEX complaints_app ON complaints (app_id, status);
CREATE INDEX complaints_status ON complaints (status, created_at);

-- Whether two apps traded (a chain between them, either way round).
CREATE INDEX chains_publisher_advertiser ON chains (publisher_app_id, advertiser_app_id);

-- +goose Down
DROP INDEX chains_publisher_advertiser;
DROP TABLE complaints;
DROP TABLE app_earn_mode_changes;
