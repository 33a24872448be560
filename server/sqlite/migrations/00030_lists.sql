-- +goose Up
-- The indexes of the dashboard's lists (keyset pages, docs/dashboard.md "API"):
-- the operators' apps by status, oldest first (the review queue: GET
-- /v1/admin/apps?status=pending), every app, and every complaint newest
-- first (GET /v1/admin/complaints without a status; with one,
-- complaints_status serves).
CREATE INDEX apps_status_created ON apps (status, created_at, id);
CREATE INDEX apps_created ON apps (created_at, id);
CREATE INDEX complaints_created ON complaints (created_at, id);

-- +goose Down
DROP INDEX complaints_created;
DROP INDEX apps_created;
DROP INDEX apps_status_created;
