-- +goose Up
-- Refunds and disputes of Stripe top-ups (docs/payments.md, "Refunds and
-- disputes"): the payment a session was paid by, and each movement of money
-- back out of a credited wallet.

-- The provider's payment of a completed session (Stripe: the Checkout
-- Session's PaymentIntent, pi_…), stored when it completes: refund and
-- dispute events name the PaymentIntent, never the session. NULL for test
-- mode's sessions and for sessions completed before this migration (those
-- are found through Stripe once, then stored).
ALTER TABLE checkout_sessions ADD COLUMN payment_ref text COLLATE "C" NULL;
CREATE UNIQUE INDEX checkout_sessions_payment_ref ON checkout_sessions (provider, payment_ref) WHERE payment_ref IS NOT NULL;

-- Each refund or dispute movement of a session, under its ledger key, in the
-- transaction of its ledger operation. amount_cents is what the wallet
-- moved (negative: debited; zero: nothing moved, e.g. a reinstatement seen
-- before its withdrawal, or a movement capped at the session's amount);
-- reported_cents what Stripe reported (a refund: the charge's cumulative
-- amount_refunded; a dispute: its amount).
CREATE TABLE checkout_reversals (
    key            text COLLATE "C" PRIMARY KEY,
    session_id     text COLLATE "C" NOT NULL REFERENCES checkout_sessions (id),
    app_id         text COLLATE "C" NOT NULL,
    kind           text COLLATE "C" NOT NULL CHECK (kind IN ('refund', 'dispute_withdrawn', 'dispute_reinstated')),
    charge_id      text COLLATE "C" NOT NULL,
    dispute_id     text COLLATE "C" NULL,
    amount_cents   bigint           NOT NULL,
    reported_cents bigint           NOT NULL CHECK (reported_cents >= 0),
    operation_id   text COLLATE "C" NULL,
    event_id       text COLLATE "C" NOT NULL,
    created_at     timestamptz      NOT NULL,
    CHECK ((amount_cents = 0) = (operation_id IS NULL)),
    CHECK ((kind = 'refund') = (dispute_id IS NULL))
);
CREATE INDEX checkout_reversals_session ON checkout_reversals (session_id);
REVOKE ALL ON checkout_reversals FROM PUBLIC;
GRANT SELECT, INSERT ON checkout_reversals TO xpromo_app;

-- No Down migration: these are money records.
