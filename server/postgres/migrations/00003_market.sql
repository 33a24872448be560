-- +goose Up
-- The market: the floor history of the rate card's categories, and campaigns.

-- Floor history, append-only: one row per change of a (category, platform)
-- floor, numbered 1, 2, 3… per pair. The current floor is the row with the
-- highest version; floors only go down (the code refuses a rise, and every
-- row is kept). Two concurrent changes of one pair write the same version and
-- collide on the primary key; the store maps that to ledger.ErrConflict and
-- the loser's transaction runs again against the winner's row.
CREATE TABLE category_floors (
    category    text COLLATE "C" NOT NULL,
    platform    text COLLATE "C" NOT NULL CHECK (platform IN ('mac', 'win')),
    version     bigint           NOT NULL CHECK (version >= 1),
    floor_cents bigint           NOT NULL CHECK (floor_cents > 0),
    reason      text             NOT NULL,
    at          timestamptz      NOT NULL,
    CONSTRAINT category_floors_pkey PRIMARY KEY (category, platform, version)
);

-- Append-only in the database, as the ledger tables are: row triggers on
-- UPDATE and DELETE, a statement trigger on TRUNCATE (ENABLE ALWAYS), and
-- the application role holds only SELECT and INSERT.
CREATE TRIGGER category_floors_no_update BEFORE UPDATE ON category_floors FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE TRIGGER category_floors_no_delete BEFORE DELETE ON category_floors FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE TRIGGER category_floors_no_truncate BEFORE TRUNCATE ON category_floors FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation();
ALTER TABLE category_floors ENABLE ALWAYS TRIGGER category_floors_no_update;
ALTER TABLE category_floors ENABLE ALWAYS TRIGGER category_floors_no_delete;
ALTER TABLE category_floors ENABLE ALWAYS TRIGGER category_floors_no_truncate;
REVOKE ALL ON category_floors FROM PUBLIC;
GRANT SELECT, INSERT ON category_floors TO xpromo_app;

-- Campaigns. categories is a JSON array of category keys. paused is the
-- advertiser's switch; status is the state last computed (market.Status).
-- floor_cents is not stored: it is computed from the current floors.
CREATE TABLE campaigns (
    id                 text COLLATE "C" PRIMARY KEY,
    app_id             text COLLATE "C" NOT NULL,
    categories         jsonb            NOT NULL CHECK (jsonb_typeof(categories) = 'array'),
    daily_budget_cents bigint           NOT NULL CHECK (daily_budget_cents >= 1000),
    max_bid_cents      bigint           NULL CHECK (max_bid_cents > 0),
    paused             boolean          NOT NULL,
    status             text COLLATE "C" NOT NULL CHECK (status IN ('throttled', 'active', 'paused')),
    created_at         timestamptz      NOT NULL,
    updated_at         timestamptz      NOT NULL
);
CREATE INDEX campaigns_app ON campaigns (app_id, created_at);
REVOKE ALL ON campaigns FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON campaigns TO xpromo_app;

-- Stats aggregate escrow holds per advertiser and over the network by time.
CREATE INDEX escrow_holds_advertiser_time ON escrow_holds (advertiser_app_id, created_at);
CREATE INDEX escrow_holds_time ON escrow_holds (created_at);
