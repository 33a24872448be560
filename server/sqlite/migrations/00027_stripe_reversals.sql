-- +goose Up
-- Refunds and disputes of Stripe top-ups (docs/payments.md, "Refunds and
-- disputes"): the payment a session was paid by, and each movement of money
-- back out of a credited wallet.

-- The provider's payment of a completed session (Stripe: the Checkout
-- Session's PaymentIntent, pi_…), stored when it completes: refund and
-- dispute events name the PaymentIntent, never the session. NULL for test
-- mode's sessions and for sessions completed before this migration (those
-- are found through Stripe once, then stored).
ALTER TABLE checkout_sessions ADD COLUMN payment_ref TEXT;
CREATE UNIQUE INDEX checkout_sessions_payment_ref ON checkout_sessions (provider, payment_ref) WHERE payment_ref IS NOT NULL;

-- Each refund or dispute movement of a session, under its ledger key, in the
-- transaction of its ledger operation. amount_cents is what the wallet
-- moved (negative: debited; zero: nothing moved, e.g. a reinstatement seen
-- before its withdrawal, or a movement capped at the session's amount);
-- reported_cents what Stripe reported (a refund: the charge's cumulative
-- amount_refunded; a dispute: its amount).
CREATE TABLE checkout_reversals (
    key            TEXT    PRIMARY KEY,
    session_id     TEXT    NOT NULL REFERENCES checkout_sessions (id),
    app_id         TEXT    NOT NULL,
    kind           TEXT    NOT NULL CHECK (kind IN ('refund', 'dispute_withdrawn', 'dispute_reinstated')),
    charge_id      TEXT    NOT NULL,
    dispute_id     TEXT,
    amount_cents   INTEGER NOT NULL,
    reported_cents INTEGER NOT NULL CHECK (reported_cents >= 0),
    operation_id   TEXT,
    event_id       TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    CHECK ((amount_cents = 0) = (operation_id IS NULL)),
    CHECK ((kind = 'refund') = (dispute_id IS NULL))
) STRICT;
CREATE INDEX checkout_reversals_session ON checkout_reversals (session_id);

-- +goose StatementBegin
CREATE TRIGGER checkout_reversals_no_delete BEFORE DELETE ON checkout_reversals BEGIN SELECT RAISE(ABORT, 'checkout_reversals rows are never deleted'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER checkout_reversals_no_update BEFORE UPDATE ON checkout_reversals BEGIN SELECT RAISE(ABORT, 'checkout_reversals rows are never updated'); END;
-- +goose StatementEnd

-- No Down migration: these are money records.
