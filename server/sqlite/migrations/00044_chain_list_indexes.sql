-- +goose Up
-- Indexes that match every filter of GET /v1/chains (PostgreSQL's 00044:
-- read its comments; sqlite's chainsQuery).
CREATE INDEX chains_advertiser_state ON chains (advertiser_app_id, state, created_at, id);
CREATE INDEX chains_publisher_state ON chains (publisher_app_id, state, created_at, id);
CREATE INDEX chains_campaign_created ON chains (campaign_id, created_at, id);
CREATE INDEX chains_campaign_state ON chains (campaign_id, state, created_at, id);

-- +goose Down
DROP INDEX chains_campaign_state;
DROP INDEX chains_campaign_created;
DROP INDEX chains_publisher_state;
DROP INDEX chains_advertiser_state;
