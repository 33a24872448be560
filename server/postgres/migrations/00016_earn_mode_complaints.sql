-- +goose Up
-- Earn mode changes (docs/apps.md "Earn mode"): apps.earn_mode is the mode
-- now; this append-only history says when each switch took effect. An app
-- that never switched has been in cash since its registration.
CREATE TABLE app_earn_mode_changes (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id    text COLLATE "C" NOT NULL REFERENCES apps (id),
    from_mode text COLLATE "C" NOT NULL CHECK (from_mode IN ('cash', 'credits')),
    to_mode   text COLLATE "C" NOT NULL CHECK (to_mode IN ('cash', 'credits')),
    at        timestamptz      NOT NULL
);
CREATE INDEX app_earn_mode_changes_app ON app_earn_mode_changes (app_id, seq);

CREATE TRIGGER app_earn_mode_changes_no_update BEFORE UPDATE ON app_earn_mode_changes FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE TRIGGER app_earn_mode_changes_no_delete BEFORE DELETE ON app_earn_mode_changes FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE TRIGGER app_earn_mode_changes_no_truncate BEFORE TRUNCATE ON app_earn_mode_changes FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation();
ALTER TABLE app_earn_mode_changes ENABLE ALWAYS TRIGGER app_earn_mode_changes_no_update;
ALTER TABLE app_earn_mode_changes ENABLE ALWAYS TRIGGER app_earn_mode_changes_no_delete;
ALTER TABLE app_earn_mode_changes ENABLE ALWAYS TRIGGER app_earn_mode_changes_no_truncate;

-- Complaints (docs/apps.md "Complaints"): an app reports another; an
-- operator resolves it, upheld or dismissed. At most one open complaint per
-- (reporter, reported) pair.
CREATE TABLE complaints (
    id              text COLLATE "C" PRIMARY KEY,
    reporter_app_id text COLLATE "C" NOT NULL REFERENCES apps (id),
    app_id          text COLLATE "C" NOT NULL REFERENCES apps (id),
    reason          text COLLATE "C" NOT NULL CHECK (reason IN ('misleading_ad', 'malware', 'broken_install', 'fraud', 'other')),
    detail          text             NOT NULL DEFAULT '',
    status          text COLLATE "C" NOT NULL CHECK (status IN ('open', 'upheld', 'dismissed')),
    created_at      timestamptz      NOT NULL,
    resolved_at     timestamptz      NULL,
    resolution_note text             NOT NULL DEFAULT '',
    CHECK (reporter_app_id <> app_id),
    CHECK ((status = 'open') = (resolved_at IS NULL))
);
CREATE UNIQUE INDEX complaints_one_open ON complaints (reporter_app_id, app_id) WHERE status = 'open';
CREATE INDEX complaints_reporter ON complaints (reporter_app_id, created_at);
CREATE INDEX complaints_app ON complaints (app_id, status);
CREATE INDEX complaints_status ON complaints (status, created_at);

-- Whether two apps traded (a chain between them, either way round).
CREATE INDEX chains_publisher_advertiser ON chains (publisher_app_id, advertiser_app_id);

REVOKE ALL ON app_earn_mode_changes, complaints FROM PUBLIC;
GRANT SELECT, INSERT ON app_earn_mode_changes TO xpromo_app;
GRANT SELECT, INSERT, UPDATE ON complaints TO xpromo_app;

-- +goose Down
DROP INDEX chains_publisher_advertiser;
DROP TABLE complaints;
DROP TABLE app_earn_mode_changes;
