-- +goose Up
-- Job workers (server/jobs, docs/apps.md "Jobs"): a claimed job is
-- `running` under a lease — the claiming runner (holder) until locked_until —
-- and attempts counts its claims. When the lease runs out with the job still
-- running, its runner is presumed dead and another claims it. last_error is
-- the stable code of the last failed attempt ('' when none), and
-- last_error_message what the app's owner may read about it.
ALTER TABLE jobs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0);
ALTER TABLE jobs ADD COLUMN holder TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN locked_until INTEGER;
ALTER TABLE jobs ADD COLUMN last_error TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN last_error_message TEXT NOT NULL DEFAULT '';

-- Due claims: queued jobs come from jobs_queued (run_after); running jobs
-- whose lease has run out from this one.
CREATE INDEX jobs_leases ON jobs (locked_until) WHERE status = 'running';

-- +goose Down
DROP INDEX jobs_leases;
ALTER TABLE jobs DROP COLUMN last_error_message;
ALTER TABLE jobs DROP COLUMN last_error;
ALTER TABLE jobs DROP COLUMN locked_until;
ALTER TABLE jobs DROP COLUMN holder;
ALTER TABLE jobs DROP COLUMN attempts;
