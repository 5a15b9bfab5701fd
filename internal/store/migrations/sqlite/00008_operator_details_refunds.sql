-- +goose Up
-- What the operator said about a payment, kept for the service's operators
-- (CLI, dashboard) and never shown in /v1 or webhooks: its own id of the
-- payment (Airtel's airtel_money_id, needed to refund), its failure code and
-- our failure_reason for it.
ALTER TABLE transactions ADD COLUMN operator_ref TEXT;
ALTER TABLE transactions ADD COLUMN operator_code TEXT;
ALTER TABLE transactions ADD COLUMN failure_reason TEXT;

-- A late SUCCESS after TIMEOUT (the payer paid, the merchant was told it
-- failed) is refunded automatically only when the merchant asked for it.
ALTER TABLE merchants ADD COLUMN auto_refund_late_success BOOLEAN NOT NULL DEFAULT FALSE;

-- Refunds: who asked, when, and the operator's answer. At most one refund
-- of a payment is under way or done: a refused one may be asked again.
CREATE TABLE refunds (
    id              TEXT PRIMARY KEY,
    merchant_id     TEXT NOT NULL REFERENCES merchants (id),
    transaction_id  TEXT NOT NULL REFERENCES transactions (id),
    amount          INTEGER NOT NULL,
    requested_by    TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('REQUESTED', 'REFUNDED', 'REFUSED', 'UNKNOWN')),
    operator_code   TEXT NOT NULL,
    operator_detail TEXT NOT NULL,
    operator_ref    TEXT NOT NULL,
    requested_at    TEXT NOT NULL,
    answered_at     TEXT
);
CREATE UNIQUE INDEX refunds_one_per_transaction ON refunds (merchant_id, transaction_id) WHERE status <> 'REFUSED';

-- The sandbox payer's answers by hand, read by the operator simulators of
-- every process sharing this database (a CLI answer reaches the server's).
CREATE TABLE sandbox_answers (
    internal_ref TEXT PRIMARY KEY REFERENCES transactions (internal_ref),
    approved     BOOLEAN NOT NULL,
    answered_at  TEXT NOT NULL
);

-- +goose Down
DROP TABLE sandbox_answers;
DROP TABLE refunds;
ALTER TABLE merchants DROP COLUMN auto_refund_late_success;
ALTER TABLE transactions DROP COLUMN failure_reason;
ALTER TABLE transactions DROP COLUMN operator_code;
ALTER TABLE transactions DROP COLUMN operator_ref;
