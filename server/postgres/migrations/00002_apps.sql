-- +goose Up
-- Apps, their API keys, status history, background jobs and the operator
-- audit log. Identifier columns are COLLATE "C" (see 00001_ledger.sql).

CREATE TABLE apps (
    id            text COLLATE "C" PRIMARY KEY,
    name          text             NOT NULL,
    platform      text COLLATE "C" NOT NULL CHECK (platform IN ('mac', 'win')),
    bundle_id     text COLLATE "C" NOT NULL,
    domain        text COLLATE "C" NOT NULL,
    download_url  text             NOT NULL,
    contact_email text             NOT NULL,
    category      text COLLATE "C" NOT NULL DEFAULT '',
    status        text COLLATE "C" NOT NULL CHECK (status IN ('pending', 'approved', 'throttled', 'live', 'suspended', 'rejected')),
    earn_mode     text COLLATE "C" NOT NULL DEFAULT 'cash' CHECK (earn_mode IN ('cash', 'credits')),
    created_at    timestamptz      NOT NULL,
    updated_at    timestamptz      NOT NULL
);

-- Only the SHA-256 of a key is stored (hex); authentication is one lookup by
-- primary key.
CREATE TABLE api_keys (
    key_hash   text COLLATE "C" PRIMARY KEY CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    app_id     text COLLATE "C" NOT NULL REFERENCES apps (id),
    prefix     text COLLATE "C" NOT NULL,
    created_at timestamptz      NOT NULL,
    expires_at timestamptz      NULL
);
CREATE INDEX api_keys_app ON api_keys (app_id);

-- Background work (scoring, vetting gate), claimed by workers with
-- SELECT … FOR UPDATE SKIP LOCKED on the partial index of queued jobs.
CREATE TABLE jobs (
    id          text COLLATE "C" PRIMARY KEY,
    app_id      text COLLATE "C" NOT NULL REFERENCES apps (id),
    kind        text COLLATE "C" NOT NULL CHECK (kind IN ('scoring', 'gate')),
    status      text COLLATE "C" NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    result      jsonb            NULL,
    created_at  timestamptz      NOT NULL,
    run_after   timestamptz      NOT NULL,
    finished_at timestamptz      NULL
);
CREATE INDEX jobs_app ON jobs (app_id, created_at);
CREATE INDEX jobs_queued ON jobs (run_after) WHERE status = 'queued';

-- Append-only: every status change of every app.
CREATE TABLE app_status_history (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id      text COLLATE "C" NOT NULL REFERENCES apps (id),
    from_status text COLLATE "C" NULL,
    to_status   text COLLATE "C" NOT NULL,
    reason      text             NOT NULL,
    actor       text COLLATE "C" NOT NULL,
    at          timestamptz      NOT NULL
);
CREATE INDEX app_status_history_app ON app_status_history (app_id, seq);

-- Append-only: every operator action.
CREATE TABLE admin_audit (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id      text COLLATE "C" NOT NULL UNIQUE,
    actor   text COLLATE "C" NOT NULL,
    action  text COLLATE "C" NOT NULL,
    subject text COLLATE "C" NOT NULL,
    detail  jsonb            NOT NULL,
    at      timestamptz      NOT NULL
);

-- The ledger's append-only layers (00001_ledger.sql) for the history and the
-- audit log: triggers (reusing ledger_forbid_mutation) that hold even for the
-- owner, ENABLE ALWAYS, and privileges without UPDATE, DELETE or TRUNCATE.
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['app_status_history', 'admin_audit'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE ON %I FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation()', t || '_no_update', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE DELETE ON %I FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation()', t || '_no_delete', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation()', t || '_no_truncate', t);
        EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', t, t || '_no_update');
        EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', t, t || '_no_delete');
        EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', t, t || '_no_truncate');
    END LOOP;
END
$$;
-- +goose StatementEnd

-- Apps, keys and jobs change (status, expiry, job progress) but are never
-- deleted: no DELETE for the application.
REVOKE ALL ON apps, api_keys, jobs, app_status_history, admin_audit FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON apps, api_keys, jobs TO xpromo_app;
GRANT SELECT, INSERT ON app_status_history, admin_audit TO xpromo_app;
