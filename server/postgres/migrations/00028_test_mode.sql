-- +goose Up
-- What a test-mode server keeps across restarts (server/testmode): the
-- test clock's total offset in nanoseconds (POST /v1/admin/clock/advance),
-- and the offer MAC secret drawn when none is configured. One row, id 1;
-- a live server never reads or writes it.
CREATE TABLE test_mode (
    id              smallint PRIMARY KEY CHECK (id = 1),
    clock_offset_ns bigint   NOT NULL DEFAULT 0 CHECK (clock_offset_ns >= 0),
    offer_secret    bytea    CHECK (offer_secret IS NULL OR length(offer_secret) >= 32)
);

REVOKE ALL ON test_mode FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON test_mode TO xpromo_app;

-- +goose Down
DROP TABLE test_mode;
