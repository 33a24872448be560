-- +goose Up
-- The canary check (docs/apps.md "Canary check").
--
-- canary_counts: canaries served to each publisher app per UTC day, added
-- in batches from the fill path's in-memory counters (as fill_counts).
CREATE TABLE canary_counts (
    day    date             NOT NULL,
    app_id text COLLATE "C" NOT NULL,
    count  bigint           NOT NULL CHECK (count >= 0),
    PRIMARY KEY (app_id, day)
);

-- canary_clicks: one row per canary whose click token the publisher's
-- registered SDK key signed, reported by a click (via 'click') or an
-- install claim (via 'install'), whichever came first. Evidence behind a
-- suspension: append-only.
CREATE TABLE canary_clicks (
    jti    text COLLATE "C" PRIMARY KEY,
    app_id text COLLATE "C" NOT NULL REFERENCES apps (id),
    via    text             NOT NULL CHECK (via IN ('click', 'install')),
    at     timestamptz      NOT NULL
);
CREATE INDEX canary_clicks_app ON canary_clicks (app_id, at);

CREATE TRIGGER canary_clicks_no_update BEFORE UPDATE ON canary_clicks FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE TRIGGER canary_clicks_no_delete BEFORE DELETE ON canary_clicks FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE TRIGGER canary_clicks_no_truncate BEFORE TRUNCATE ON canary_clicks FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation();
ALTER TABLE canary_clicks ENABLE ALWAYS TRIGGER canary_clicks_no_update;
ALTER TABLE canary_clicks ENABLE ALWAYS TRIGGER canary_clicks_no_delete;
ALTER TABLE canary_clicks ENABLE ALWAYS TRIGGER canary_clicks_no_truncate;

REVOKE ALL ON canary_counts, canary_clicks FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON canary_counts TO xpromo_app;
GRANT SELECT, INSERT ON canary_clicks TO xpromo_app;

-- +goose Down
DROP TABLE canary_clicks;
DROP TABLE canary_counts;
