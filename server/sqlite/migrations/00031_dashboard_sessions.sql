-- +goose Up
-- The dashboard's sign-in (server/dashboard/session, docs/dashboard.md
-- "Sign-in and sessions"). Only the SHA-256 of a session's or a link's
-- token is kept. A session ends 30 minutes after last_seen_at or 12 hours
-- after created_at; a link 5 minutes after it was made, or when used (its
-- row is deleted). Times are Unix microseconds, as elsewhere.
CREATE TABLE dashboard_sessions (
    token_hash   BLOB    PRIMARY KEY CHECK (length(token_hash) = 32),
    role         TEXT    NOT NULL CHECK (role IN ('app', 'operator')),
    app_id       TEXT    REFERENCES apps (id),
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    CHECK ((role = 'app') = (app_id IS NOT NULL))
) STRICT;
CREATE INDEX dashboard_sessions_last_seen ON dashboard_sessions (last_seen_at);

CREATE TABLE dashboard_sign_in_links (
    token_hash BLOB    PRIMARY KEY CHECK (length(token_hash) = 32),
    app_id     TEXT    NOT NULL REFERENCES apps (id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX dashboard_sign_in_links_expires ON dashboard_sign_in_links (expires_at);

-- +goose Down
DROP TABLE dashboard_sign_in_links;
DROP TABLE dashboard_sessions;
