-- +goose Up
-- Clawbacks of cleared chains (docs/apps.md "Lifecycle", docs/ledger.md):
-- one row per chain clawed back after its publisher was suspended for fraud,
-- written in the transaction of the ledger's clawback operation. The primary
-- key makes a chain's clawback happen at most once, whoever runs the review.
-- Append-only: UPDATE, DELETE and INSERT OR REPLACE abort.
CREATE TABLE chain_clawbacks (
    chain_id TEXT    PRIMARY KEY REFERENCES chains (id),
    app_id   TEXT    NOT NULL REFERENCES apps (id),
    reason   TEXT    NOT NULL,
    at       INTEGER NOT NULL
) STRICT;
CREATE INDEX chain_clawbacks_app ON chain_clawbacks (app_id, at);

-- +goose StatementBegin
CREATE TRIGGER chain_clawbacks_no_update BEFORE UPDATE ON chain_clawbacks BEGIN SELECT RAISE(ABORT, 'chain_clawbacks is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER chain_clawbacks_no_delete BEFORE DELETE ON chain_clawbacks BEGIN SELECT RAISE(ABORT, 'chain_clawbacks is append-only: DELETE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER chain_clawbacks_no_replace BEFORE INSERT ON chain_clawbacks
WHEN EXISTS (SELECT 1 FROM chain_clawbacks WHERE chain_id = NEW.chain_id)
BEGIN SELECT RAISE(ABORT, 'chain_clawbacks is append-only: REPLACE blocked'); END;
-- +goose StatementEnd

-- The lifecycle review: an app's chains as publisher, by time (its fraud
-- rate; its cleared chains to claw back).
CREATE INDEX chains_publisher_created ON chains (publisher_app_id, created_at);

-- +goose Down
DROP INDEX chains_publisher_created;
DROP TABLE chain_clawbacks;
