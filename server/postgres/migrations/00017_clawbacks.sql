-- +goose Up
-- Clawbacks of cleared chains (docs/apps.md "Lifecycle", docs/ledger.md):
-- one row per chain clawed back after its publisher was suspended for fraud,
-- written in the transaction of the ledger's clawback operation. The primary
-- key makes a chain's clawback happen at most once, whoever runs the review.
CREATE TABLE chain_clawbacks (
    chain_id text COLLATE "C" PRIMARY KEY REFERENCES chains (id),
    app_id   text COLLATE "C" NOT NULL REFERENCES apps (id),
    reason   text             NOT NULL,
    at       timestamptz      NOT NULL
);
CREATE INDEX chain_clawbacks_app ON chain_clawbacks (app_id, at);

CREATE TRIGGER chain_clawbacks_no_update BEFORE UPDATE ON chain_clawbacks FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE TRIGGER chain_clawbacks_no_delete BEFORE DELETE ON chain_clawbacks FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE TRIGGER chain_clawbacks_no_truncate BEFORE TRUNCATE ON chain_clawbacks FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation();
ALTER TABLE chain_clawbacks ENABLE ALWAYS TRIGGER chain_clawbacks_no_update;
ALTER TABLE chain_clawbacks ENABLE ALWAYS TRIGGER chain_clawbacks_no_delete;
ALTER TABLE chain_clawbacks ENABLE ALWAYS TRIGGER chain_clawbacks_no_truncate;

-- The lifecycle review: an app's chains as publisher, by time (its fraud
-- rate; its cleared chains to claw back).
CREATE INDEX chains_publisher_created ON chains (publisher_app_id, created_at);

REVOKE ALL ON chain_clawbacks FROM PUBLIC;
GRANT SELECT, INSERT ON chain_clawbacks TO xpromo_app;

-- +goose Down
DROP INDEX chains_publisher_created;
DROP TABLE chain_clawbacks;
