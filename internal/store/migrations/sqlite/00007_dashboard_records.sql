-- +goose Up
-- What the merchant dashboard reads and records beyond the API.
--
-- Secret rotation: the secret an endpoint had before its last rotation
-- stays valid until previous_secret_expires_at (24 hours), and every
-- delivery meanwhile carries a webhook-signature for each of the two.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at TEXT;

-- A bulk re-send ("every undelivered delivery since a time") puts each
-- delivery back to pending with resend_requested_at set: its job then makes
-- one manual attempt, and a second request finds it pending and leaves it.
ALTER TABLE webhook_deliveries ADD COLUMN resend_requested_at TEXT;
-- The history filtered by state, and a transaction's deliveries.
CREATE INDEX webhook_deliveries_merchant_state ON webhook_deliveries (merchant_id, state, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_transaction ON webhook_deliveries (merchant_id, transaction_id);

-- A transaction's timeline: created, push accepted, each operator answer
-- heard (callback, poll, expiry check, sandbox phone) and the final state,
-- each written in the database transaction of the change it describes.
CREATE TABLE transaction_events (
    id             TEXT PRIMARY KEY,
    merchant_id    TEXT NOT NULL REFERENCES merchants (id),
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    kind           TEXT NOT NULL,
    source         TEXT NOT NULL,
    status         TEXT NOT NULL,
    detail         TEXT NOT NULL,
    at             TEXT NOT NULL
);
CREATE INDEX transaction_events_transaction ON transaction_events (merchant_id, transaction_id, at, id);

-- Reconciliation cases are resolved by a person with a note; the open ones
-- are counted for the overview's alert.
ALTER TABLE reconciliation_cases ADD COLUMN resolved_at TEXT;
ALTER TABLE reconciliation_cases ADD COLUMN resolved_by TEXT;
ALTER TABLE reconciliation_cases ADD COLUMN resolution_note TEXT;
CREATE INDEX reconciliation_cases_open ON reconciliation_cases (merchant_id) WHERE resolved_at IS NULL;

-- +goose Down
DROP INDEX reconciliation_cases_open;
ALTER TABLE reconciliation_cases DROP COLUMN resolution_note;
ALTER TABLE reconciliation_cases DROP COLUMN resolved_by;
ALTER TABLE reconciliation_cases DROP COLUMN resolved_at;
DROP TABLE transaction_events;
DROP INDEX webhook_deliveries_transaction;
DROP INDEX webhook_deliveries_merchant_state;
ALTER TABLE webhook_deliveries DROP COLUMN resend_requested_at;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_expires_at;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret;
