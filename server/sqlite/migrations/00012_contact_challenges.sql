-- +goose Up
-- Contact-email challenges of the vetting gate (server/gate/contact,
-- docs/gate.md): only SHA-256 hashes of the link's token and of the code
-- (salted per challenge) are kept. subject is what the address is the
-- contact of (an app id). used_at is set once, by a compare-and-set
-- (of two concurrent answers, one wins); code_attempts counts the codes
-- tried, right or wrong. seq orders challenges created in the same
-- microsecond (the newest supersedes the others).
CREATE TABLE contact_challenges (
    seq           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    subject       TEXT    NOT NULL,
    email         TEXT    NOT NULL,
    token_hash    BLOB    NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    code_salt     BLOB    NOT NULL,
    code_hash     BLOB    NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    used_at       INTEGER,
    code_attempts INTEGER NOT NULL DEFAULT 0 CHECK (code_attempts >= 0)
) STRICT;
CREATE INDEX contact_challenges_subject ON contact_challenges (subject, created_at);

-- +goose Down
DROP TABLE contact_challenges;
