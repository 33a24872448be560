-- +goose Up
-- Indexes that match every filter of GET /v1/chains (postgres.ChainsQuery).
-- The dashboard's installs page filters an app's chains by state (and by
-- campaign); without these a filtered page walked the side's
-- (app, created_at) index and dropped the chains of other states or
-- campaigns, so a page of a rare state read the app's whole history to
-- find it (or to find that none is left): the cost grew with every chain
-- the app ever had. Led by the filters' columns, a page now reads about as
-- many index entries and rows as it returns.
--
-- The write cost: a chain's insert and each change of its state add an
-- entry to each (the chains' updates are not HOT already: state is in
-- other indexes' keys and predicates); measured in BENCHMARKS.md
-- ("Chain lists that match their filters").
CREATE INDEX chains_advertiser_state ON chains (advertiser_app_id, state, created_at, id);
CREATE INDEX chains_publisher_state ON chains (publisher_app_id, state, created_at, id);
CREATE INDEX chains_campaign_created ON chains (campaign_id, created_at, id);
CREATE INDEX chains_campaign_state ON chains (campaign_id, state, created_at, id);

-- +goose Down
DROP INDEX chains_campaign_state;
DROP INDEX chains_campaign_created;
DROP INDEX chains_publisher_state;
DROP INDEX chains_advertiser_state;
