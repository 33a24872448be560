-- +goose Up
-- A refused attribution message is recorded at most once per offer and
-- reason (docs/protocol.md, Refusals): the lookup that makes it so.
CREATE INDEX chains_refusals ON chains (claimed_nonce, reason) WHERE nonce IS NULL;
