-- +goose Up
-- Stripe (docs/payments.md): sessions closed unpaid for a reason, the
-- reconciliation pass's claims, and the provider's events seen.

-- Why a session closed unpaid other than by expiring (its delayed payment
-- failed); NULL otherwise. The status of such a session is 'expired'.
ALTER TABLE checkout_sessions ADD COLUMN failure text NULL;
-- When the reconciliation pass last asked the provider about an open
-- session; NULL: never.
ALTER TABLE checkout_sessions ADD COLUMN checked_at timestamptz NULL;
CREATE INDEX checkout_sessions_open ON checkout_sessions (provider, created_at) WHERE status = 'open';

-- Each provider event (Stripe: evt_…) once, recorded in the transaction of
-- its effect: a redelivered event has none.
CREATE TABLE provider_events (
    provider    text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    type        text COLLATE "C" NOT NULL,
    object_id   text COLLATE "C" NOT NULL,
    outcome     text             NOT NULL,
    received_at timestamptz      NOT NULL,
    PRIMARY KEY (provider, id)
);
GRANT SELECT, INSERT ON provider_events TO xpromo_app;

-- No Down migration: these are money records.
