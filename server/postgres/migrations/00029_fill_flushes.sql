-- +goose Up
-- The fill-count flushes stored (attribution.FlushFills): a flush whose
-- COMMIT went unanswered (a failover) runs again under its id, and adds
-- nothing when its id is here, so no count is added twice. Rows older than
-- two days are deleted by the flushes themselves.
CREATE TABLE fill_flushes (
    id         text COLLATE "C" PRIMARY KEY,
    flushed_at timestamptz      NOT NULL
);
CREATE INDEX fill_flushes_flushed_at ON fill_flushes (flushed_at);
REVOKE ALL ON fill_flushes FROM PUBLIC;
GRANT SELECT, INSERT, DELETE ON fill_flushes TO xpromo_app;

-- +goose Down
DROP TABLE fill_flushes;
