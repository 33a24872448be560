-- +goose Up
-- The retention purge (server/retention) deletes fill counts by day past
-- 400 days, in batches, seeking on the primary key (day, campaign_id,
-- publisher_app_id); no trigger fires on DELETE, so the daily rollups keep
-- every fill counted. SQLite has no privileges to grant (PostgreSQL's 00035
-- grants DELETE): this migration keeps the two stores' versions in step.
SELECT 1;

-- +goose Down
SELECT 1;
