-- +goose Up
-- The ledger. STRICT tables so amounts really are integers; times are
-- microseconds since the Unix epoch (UTC), the precision the ledger hashes.

-- Account heads: the balance, last sequence number and last hash of each
-- account. Mutable (the head moves with every line) but never deleted.
CREATE TABLE ledger_accounts (
    id      TEXT    PRIMARY KEY,
    balance INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    head    BLOB    NOT NULL,
    CHECK (id NOT LIKE 'escrow:%' OR balance >= 0)
) STRICT;

CREATE TABLE ledger_operations (
    id           TEXT    PRIMARY KEY,
    key          TEXT    NOT NULL UNIQUE,
    kind         TEXT    NOT NULL,
    request_hash BLOB    NOT NULL,
    created_at   INTEGER NOT NULL
) STRICT;

CREATE TABLE ledger_lines (
    id                  TEXT    PRIMARY KEY,
    operation_id        TEXT    NOT NULL REFERENCES ledger_operations (id),
    idx                 INTEGER NOT NULL,
    account_id          TEXT    NOT NULL REFERENCES ledger_accounts (id),
    seq                 INTEGER NOT NULL,
    type                TEXT    NOT NULL CHECK (type IN ('topup', 'earn', 'charge', 'escrow_hold', 'escrow_release', 'clawback', 'payout', 'adjustment', 'take', 'credit_bonus')),
    amount              INTEGER NOT NULL CHECK (amount <> 0),
    balance_after       INTEGER NOT NULL,
    counterparty_app_id TEXT,
    chain_id            TEXT,
    note                TEXT,
    earn_mode           TEXT CHECK (earn_mode IN ('cash', 'credits')),
    created_at          INTEGER NOT NULL,
    prev_hash           BLOB    NOT NULL,
    hash                BLOB    NOT NULL,
    UNIQUE (account_id, seq),
    UNIQUE (operation_id, idx)
) STRICT;
CREATE INDEX ledger_lines_account_time ON ledger_lines (account_id, created_at);

CREATE TABLE escrow_holds (
    id                TEXT    PRIMARY KEY,
    advertiser_app_id TEXT    NOT NULL,
    publisher_app_id  TEXT,
    amount            INTEGER NOT NULL CHECK (amount > 0),
    chain_id          TEXT,
    created_at        INTEGER NOT NULL
) STRICT;

-- A hold resolves at most once: the primary key is the guarantee.
CREATE TABLE escrow_resolutions (
    hold_id      TEXT    PRIMARY KEY REFERENCES escrow_holds (id),
    resolution   TEXT    NOT NULL CHECK (resolution IN ('charge', 'release')),
    operation_id TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
) STRICT;

-- Append-only, enforced by the database. UPDATE and DELETE abort. SQLite has
-- no TRUNCATE (an unqualified DELETE fires the delete trigger). INSERT OR
-- REPLACE and upserts delete the old row without firing delete triggers, so a
-- BEFORE INSERT guard refuses any insert that would collide with a row.
-- +goose StatementBegin
CREATE TRIGGER ledger_operations_no_update BEFORE UPDATE ON ledger_operations BEGIN SELECT RAISE(ABORT, 'ledger_operations is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_operations_no_delete BEFORE DELETE ON ledger_operations BEGIN SELECT RAISE(ABORT, 'ledger_operations is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_operations_no_replace BEFORE INSERT ON ledger_operations
WHEN EXISTS (SELECT 1 FROM ledger_operations WHERE id = NEW.id OR key = NEW.key)
BEGIN SELECT RAISE(ABORT, 'ledger_operations is append-only: REPLACE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_lines_no_update BEFORE UPDATE ON ledger_lines BEGIN SELECT RAISE(ABORT, 'ledger_lines is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_lines_no_delete BEFORE DELETE ON ledger_lines BEGIN SELECT RAISE(ABORT, 'ledger_lines is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_lines_no_replace BEFORE INSERT ON ledger_lines
WHEN EXISTS (SELECT 1 FROM ledger_lines WHERE id = NEW.id OR (account_id = NEW.account_id AND seq = NEW.seq) OR (operation_id = NEW.operation_id AND idx = NEW.idx))
BEGIN SELECT RAISE(ABORT, 'ledger_lines is append-only: REPLACE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER escrow_holds_no_update BEFORE UPDATE ON escrow_holds BEGIN SELECT RAISE(ABORT, 'escrow_holds is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER escrow_holds_no_delete BEFORE DELETE ON escrow_holds BEGIN SELECT RAISE(ABORT, 'escrow_holds is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER escrow_holds_no_replace BEFORE INSERT ON escrow_holds
WHEN EXISTS (SELECT 1 FROM escrow_holds WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'escrow_holds is append-only: REPLACE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER escrow_resolutions_no_update BEFORE UPDATE ON escrow_resolutions BEGIN SELECT RAISE(ABORT, 'escrow_resolutions is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER escrow_resolutions_no_delete BEFORE DELETE ON escrow_resolutions BEGIN SELECT RAISE(ABORT, 'escrow_resolutions is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER escrow_resolutions_no_replace BEFORE INSERT ON escrow_resolutions
WHEN EXISTS (SELECT 1 FROM escrow_resolutions WHERE hold_id = NEW.hold_id)
BEGIN SELECT RAISE(ABORT, 'escrow_resolutions is append-only: REPLACE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_accounts_no_delete BEFORE DELETE ON ledger_accounts BEGIN SELECT RAISE(ABORT, 'ledger_accounts are never deleted'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_accounts_no_replace BEFORE INSERT ON ledger_accounts
WHEN EXISTS (SELECT 1 FROM ledger_accounts WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'ledger_accounts are never replaced'); END;
-- +goose StatementEnd

-- No Down migration: the ledger is never migrated down; dropping it would
-- destroy money records.
