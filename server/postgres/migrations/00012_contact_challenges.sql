-- +goose Up
-- Contact-email challenges of the vetting gate (server/gate/contact,
-- docs/gate.md): only SHA-256 hashes of the link's token and of the code
-- (salted per challenge) are kept. subject is what the address is the
-- contact of (an app id). used_at is set once, by a compare-and-set
-- (of two concurrent answers, one wins); code_attempts counts the codes
-- tried, right or wrong. seq orders challenges created in the same
-- microsecond (the newest supersedes the others).
CREATE TABLE contact_challenges (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            text COLLATE "C" NOT NULL UNIQUE,
    subject       text COLLATE "C" NOT NULL,
    email         text             NOT NULL,
    token_hash    bytea            NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    code_salt     bytea            NOT NULL,
    code_hash     bytea            NOT NULL,
    created_at    timestamptz      NOT NULL,
    expires_at    timestamptz      NOT NULL,
    used_at       timestamptz      NULL,
    code_attempts integer          NOT NULL DEFAULT 0 CHECK (code_attempts >= 0)
);
CREATE INDEX contact_challenges_subject ON contact_challenges (subject, created_at);
GRANT SELECT, INSERT, UPDATE ON contact_challenges TO xpromo_app;

-- +goose Down
DROP TABLE contact_challenges;
