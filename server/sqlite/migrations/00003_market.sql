-- +goose Up
-- The market: the floor history of the rate card's categories, and campaigns.
-- Times are microseconds since the Unix epoch (UTC), as in the ledger.

-- Floor history, append-only: one row per change of a (category, platform)
-- floor, numbered 1, 2, 3… per pair. The current floor is the row with the
-- highest version; floors only go down (the code refuses a rise, and every
-- row is kept). The primary key makes two concurrent changes of one pair
-- collide instead of both landing.
CREATE TABLE category_floors (
    category    TEXT    NOT NULL,
    platform    TEXT    NOT NULL CHECK (platform IN ('mac', 'win')),
    version     INTEGER NOT NULL CHECK (version >= 1),
    floor_cents INTEGER NOT NULL CHECK (floor_cents > 0),
    reason      TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (category, platform, version)
) STRICT;

-- Append-only, enforced by the database (same pattern as the ledger tables).
-- +goose StatementBegin
CREATE TRIGGER category_floors_no_update BEFORE UPDATE ON category_floors BEGIN SELECT RAISE(ABORT, 'category_floors is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER category_floors_no_delete BEFORE DELETE ON category_floors BEGIN SELECT RAISE(ABORT, 'category_floors is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER category_floors_no_replace BEFORE INSERT ON category_floors
WHEN EXISTS (SELECT 1 FROM category_floors WHERE category = NEW.category AND platform = NEW.platform AND version = NEW.version)
BEGIN SELECT RAISE(ABORT, 'category_floors is append-only: REPLACE blocked'); END;
-- +goose StatementEnd

-- Campaigns. categories is a JSON array of category keys. paused is the
-- advertiser's switch; status is the state last computed (market.Status).
-- floor_cents is not stored: it is computed from the current floors.
CREATE TABLE campaigns (
    id                 TEXT    PRIMARY KEY,
    app_id             TEXT    NOT NULL,
    categories         TEXT    NOT NULL CHECK (json_valid(categories) AND json_type(categories) = 'array'),
    daily_budget_cents INTEGER NOT NULL CHECK (daily_budget_cents >= 1000),
    max_bid_cents      INTEGER CHECK (max_bid_cents > 0),
    paused             INTEGER NOT NULL CHECK (paused IN (0, 1)),
    status             TEXT    NOT NULL CHECK (status IN ('throttled', 'active', 'paused')),
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
) STRICT;
CREATE INDEX campaigns_app ON campaigns (app_id, created_at);

-- Stats aggregate escrow holds per advertiser and over the network by time.
CREATE INDEX escrow_holds_advertiser_time ON escrow_holds (advertiser_app_id, created_at);
CREATE INDEX escrow_holds_time ON escrow_holds (created_at);
