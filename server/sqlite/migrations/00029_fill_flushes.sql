-- +goose Up
-- The fill-count flushes stored (attribution.FlushFills): a flush run again
-- under its id adds nothing when its id is here. flushed_at is microseconds
-- since the Unix epoch; rows older than two days are deleted by the flushes.
CREATE TABLE fill_flushes (
    id         TEXT    PRIMARY KEY,
    flushed_at INTEGER NOT NULL
) STRICT;
CREATE INDEX fill_flushes_flushed_at ON fill_flushes (flushed_at);

-- +goose Down
DROP TABLE fill_flushes;
