-- +goose Up
-- Job workers (server/jobs, docs/apps.md "Jobs"): a claimed job is
-- `running` under a lease — the claiming runner (holder) until locked_until —
-- and attempts counts its claims. When the lease runs out with the job still
-- running, its runner is presumed dead and another claims it. last_error is
-- the stable code of the last failed attempt ('' when none), and
-- last_error_message what the app's owner may read about it.
ALTER TABLE jobs
    ADD COLUMN attempts           integer          NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    ADD COLUMN holder             text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN locked_until       timestamptz      NULL,
    ADD COLUMN last_error         text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN last_error_message text             NOT NULL DEFAULT '';

-- Due claims (SELECT … FOR UPDATE SKIP LOCKED): queued jobs come from
-- jobs_queued (run_after); running jobs whose lease has run out from this one.
CREATE INDEX jobs_leases ON jobs (locked_until) WHERE status = 'running';

-- +goose Down
DROP INDEX jobs_leases;
ALTER TABLE jobs
    DROP COLUMN last_error_message,
    DROP COLUMN last_error,
    DROP COLUMN locked_until,
    DROP COLUMN holder,
    DROP COLUMN attempts;
