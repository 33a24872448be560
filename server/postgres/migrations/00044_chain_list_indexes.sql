-- +goose NO TRANSACTION
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
--
-- Built CONCURRENTLY, outside a transaction (hence NO TRANSACTION, on the
-- first line): a year of chains is millions of rows, and a plain CREATE
-- INDEX would hold off every claim, click and settlement (its lock blocks
-- writes to chains) for as long as the four builds take, while the
-- instances still on the previous release keep serving. A build that fails
-- (or a process killed during it) leaves an invalid index behind and the
-- migration unrecorded, so each index is first dropped if it exists, and
-- the rerun at the next start begins again.
DROP INDEX CONCURRENTLY IF EXISTS chains_advertiser_state;
CREATE INDEX CONCURRENTLY chains_advertiser_state ON chains (advertiser_app_id, state, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS chains_publisher_state;
CREATE INDEX CONCURRENTLY chains_publisher_state ON chains (publisher_app_id, state, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS chains_campaign_created;
CREATE INDEX CONCURRENTLY chains_campaign_created ON chains (campaign_id, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS chains_campaign_state;
CREATE INDEX CONCURRENTLY chains_campaign_state ON chains (campaign_id, state, created_at, id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS chains_campaign_state;
DROP INDEX CONCURRENTLY IF EXISTS chains_campaign_created;
DROP INDEX CONCURRENTLY IF EXISTS chains_publisher_state;
DROP INDEX CONCURRENTLY IF EXISTS chains_advertiser_state;
