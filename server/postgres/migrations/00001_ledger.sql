-- +goose Up
-- The ledger (PostgreSQL). Table and column names are a contract shared with
-- the SQLite store and the store test suite. Times are timestamptz with
-- microsecond precision, the precision the ledger hashes.
--
-- Append-only is enforced in three layers, because each one covers a gap of
-- the others:
--   1. Privileges. The application never runs as the owner: every pooled
--      connection does SET ROLE xpromo_app, a NOLOGIN role holding SELECT and
--      INSERT on the append-only tables (plus UPDATE on the account heads) and
--      nothing else. An application bug, or SQL injected into it, gets
--      "permission denied" for UPDATE, DELETE and TRUNCATE, and cannot
--      disable triggers (ALTER TABLE needs ownership) nor set
--      session_replication_role (superuser only).
--   2. Triggers. BEFORE UPDATE / BEFORE DELETE row triggers and a BEFORE
--      TRUNCATE statement trigger raise an error even for the owner or a
--      superuser running an ad-hoc statement, e.g. from psql. They are
--      ENABLE ALWAYS, so SET session_replication_role = replica (which skips
--      ordinary triggers and foreign keys) does not switch them off.
--   3. The hash chain. An owner can still ALTER TABLE … DISABLE TRIGGER, and a
--      superuser can do anything; against them the defence is tamper
--      evidence: every line is hash-chained per account, and `ledger verify`
--      recomputes the chains, the balances and the zero-sum invariants.
-- There are deliberately no ON DELETE CASCADE foreign keys and no
-- DO INSTEAD NOTHING rules, which would hide a write instead of failing it.

-- The application role. Roles are cluster-wide and several databases of one
-- cluster may be migrated at the same moment (parallel tests, several
-- instances), so a concurrent creation is not an error: the loser of the race
-- sees duplicate_object, or unique_violation on the catalog's index when both
-- got past the existence check.
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'xpromo_app') THEN
        CREATE ROLE xpromo_app NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;
-- +goose StatementEnd

-- The owner (the user migrations connect as) must be a member of xpromo_app
-- to SET ROLE to it, unless it is a superuser. Granting an existing
-- membership again is only a notice; the concurrent case is swallowed.
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('GRANT xpromo_app TO %I', current_user);
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;
-- +goose StatementEnd

-- Identifier columns are COLLATE "C": ids, keys and types are ASCII
-- identifiers, byte order makes ORDER BY id agree with Go's sort (and with the
-- SQLite store) whatever the database's locale, and comparisons skip strcoll.

-- Account heads: the balance, last sequence number and last hash of each
-- account. Mutable (the head moves with every line) but never deleted. The
-- low fillfactor keeps room on each page so that the constant head updates
-- stay HOT (no index churn): the updated columns are not indexed.
CREATE TABLE ledger_accounts (
    id      text COLLATE "C" PRIMARY KEY,
    balance bigint           NOT NULL,
    seq     bigint           NOT NULL,
    head    bytea            NOT NULL,
    CHECK (id NOT LIKE 'escrow:%' OR balance >= 0)
) WITH (fillfactor = 50);

CREATE TABLE ledger_operations (
    id           text COLLATE "C" PRIMARY KEY,
    key          text COLLATE "C" NOT NULL UNIQUE,
    kind         text COLLATE "C" NOT NULL,
    request_hash bytea            NOT NULL,
    created_at   timestamptz      NOT NULL
);

CREATE TABLE ledger_lines (
    id                  text COLLATE "C" PRIMARY KEY,
    operation_id        text COLLATE "C" NOT NULL REFERENCES ledger_operations (id),
    idx                 int              NOT NULL,
    account_id          text COLLATE "C" NOT NULL REFERENCES ledger_accounts (id),
    seq                 bigint           NOT NULL,
    type                text COLLATE "C" NOT NULL CHECK (type IN ('topup', 'earn', 'charge', 'escrow_hold', 'escrow_release', 'clawback', 'payout', 'adjustment', 'take', 'credit_bonus')),
    amount              bigint           NOT NULL CHECK (amount <> 0),
    balance_after       bigint           NOT NULL,
    counterparty_app_id text COLLATE "C" NULL,
    chain_id            text COLLATE "C" NULL,
    note                text             NULL,
    earn_mode           text COLLATE "C" NULL CHECK (earn_mode IN ('cash', 'credits')),
    created_at          timestamptz      NOT NULL,
    prev_hash           bytea            NOT NULL,
    hash                bytea            NOT NULL,
    UNIQUE (account_id, seq),
    UNIQUE (operation_id, idx)
);
CREATE INDEX ledger_lines_account_time ON ledger_lines (account_id, created_at);

CREATE TABLE escrow_holds (
    id                text COLLATE "C" PRIMARY KEY,
    advertiser_app_id text COLLATE "C" NOT NULL,
    publisher_app_id  text COLLATE "C" NULL,
    amount            bigint           NOT NULL CHECK (amount > 0),
    chain_id          text COLLATE "C" NULL,
    created_at        timestamptz      NOT NULL
);

-- A hold resolves at most once: the primary key is the guarantee. No foreign
-- key on operation_id: verify, not the schema, is what catches a forged one.
CREATE TABLE escrow_resolutions (
    hold_id      text COLLATE "C" PRIMARY KEY REFERENCES escrow_holds (id),
    resolution   text COLLATE "C" NOT NULL CHECK (resolution IN ('charge', 'release')),
    operation_id text COLLATE "C" NOT NULL,
    created_at   timestamptz      NOT NULL
);

-- Layer 2: the triggers. The error is SQLSTATE 42501 (insufficient_privilege,
-- the same class as layer 1) and names the table, so the store maps both
-- layers to the ledger_append_only application error.
-- +goose StatementBegin
CREATE FUNCTION ledger_forbid_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % blocked', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege',
              SCHEMA = TG_TABLE_SCHEMA,
              TABLE = TG_TABLE_NAME,
              HINT = 'ledger rows are never changed; post a correcting operation instead';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['ledger_operations', 'ledger_lines', 'escrow_holds', 'escrow_resolutions'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE ON %I FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation()', t || '_no_update', t);
        EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', t, t || '_no_update');
    END LOOP;
    -- Account heads are updated, never deleted or truncated.
    FOREACH t IN ARRAY ARRAY['ledger_operations', 'ledger_lines', 'escrow_holds', 'escrow_resolutions', 'ledger_accounts'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE DELETE ON %I FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation()', t || '_no_delete', t);
        -- TRUNCATE triggers can only be statement-level, and DELETE triggers
        -- do not fire on TRUNCATE.
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation()', t || '_no_truncate', t);
        EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', t, t || '_no_delete');
        EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', t, t || '_no_truncate');
    END LOOP;
END
$$;
-- +goose StatementEnd

-- Layer 1: the privileges. Nothing for PUBLIC; SELECT and INSERT for the
-- application on the append-only tables, and UPDATE on the account heads only.
-- (SELECT … FOR UPDATE needs UPDATE privilege, which is why the store locks
-- account rows and never ledger rows.) goose's version table gets no grant:
-- the application has no business with it.
REVOKE ALL ON ledger_accounts, ledger_operations, ledger_lines, escrow_holds, escrow_resolutions FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO xpromo_app;
GRANT SELECT, INSERT ON ledger_operations, ledger_lines, escrow_holds, escrow_resolutions TO xpromo_app;
GRANT SELECT, INSERT, UPDATE ON ledger_accounts TO xpromo_app;

-- No Down migration: the ledger is never migrated down; dropping it would
-- destroy money records.
