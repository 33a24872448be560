-- +goose Up
-- The canary check (docs/apps.md "Canary check").
--
-- canary_counts: canaries served to each publisher app per UTC day, added
-- in batches from the fill path's in-memory counters (as fill_counts).
CREATE TABLE canary_counts (
    day    INTEGER NOT NULL, -- microseconds of the day's midnight UTC
    app_id TEXT    NOT NULL,
    count  INTEGER NOT NULL CHECK (count >= 0),
    PRIMARY KEY (app_id, day)
) STRICT;

-- canary_clicks: one row per canary whose click token the publisher's
-- registered SDK key signed, reported by a click (via 'click') or an
-- install claim (via 'install'), whichever came first. Evidence behind a
-- suspension: append-only.
CREATE TABLE canary_clicks (
    jti    TEXT    PRIMARY KEY,
    app_id TEXT    NOT NULL REFERENCES apps (id),
    via    TEXT    NOT NULL CHECK (via IN ('click', 'install')),
    at     INTEGER NOT NULL
) STRICT;
CREATE INDEX canary_clicks_app ON canary_clicks (app_id, at);

-- +goose StatementBegin
CREATE TRIGGER canary_clicks_no_update BEFORE UPDATE ON canary_clicks BEGIN SELECT RAISE(ABORT, 'canary_clicks is append-only: UPDATE blocked'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER canary_clicks_no_delete BEFORE DELETE ON canary_clicks BEGIN SELECT RAISE(ABORT, 'canary_clicks is append-only: DELETE blocked'); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE canary_clicks;
DROP TABLE canary_counts;
