-- +goose Up
-- Stripe (docs/payments.md): sessions closed unpaid for a reason, the
-- reconciliation pass's claims, and the provider's events seen.

-- Why a session closed unpaid other than by expiring (its delayed payment
-- failed); NULL otherwise. The status of such a session is 'expired'.
ALTER TABLE checkout_sessions ADD COLUMN failure TEXT;
-- When the reconciliation pass last asked the provider about an open
-- session; NULL: never.
ALTER TABLE checkout_sessions ADD COLUMN checked_at INTEGER;
CREATE INDEX checkout_sessions_open ON checkout_sessions (provider, created_at) WHERE status = 'open';

-- Each provider event (Stripe: evt_…) once, recorded in the transaction of
-- its effect: a redelivered event has none.
CREATE TABLE provider_events (
    provider    TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    object_id   TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (provider, id)
) STRICT;

-- +goose StatementBegin
CREATE TRIGGER provider_events_no_delete BEFORE DELETE ON provider_events BEGIN SELECT RAISE(ABORT, 'provider_events rows are never deleted'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER provider_events_no_update BEFORE UPDATE ON provider_events BEGIN SELECT RAISE(ABORT, 'provider_events rows are never updated'); END;
-- +goose StatementEnd

-- No Down migration: these are money records.
