-- +goose Up
-- The retention purge (server/retention) deletes fill counts by day past
-- 400 days, in batches. The application's role could only add to them; no
-- trigger fires on DELETE, so the daily rollups keep every fill counted.
-- The purge seeks on the primary key (day, campaign_id, publisher_app_id):
-- no new index.
GRANT DELETE ON fill_counts TO xpromo_app;

-- +goose Down
REVOKE DELETE ON fill_counts FROM xpromo_app;
