-- +goose Up
-- A refund that certainly never reached the operator (it could not be
-- connected to, or its access token could not be had) is NOT_SENT: no
-- money moved, and, like a REFUSED one, it does not stop the payment being
-- refunded again. Before, it was UNKNOWN, which blocks a second refund for
-- good and sends a person to the operator's portal for nothing.
ALTER TABLE refunds DROP CONSTRAINT refunds_status_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_status_check
    CHECK (status IN ('REQUESTED', 'REFUNDED', 'REFUSED', 'UNKNOWN', 'NOT_SENT'));
DROP INDEX refunds_one_per_transaction;
CREATE UNIQUE INDEX refunds_one_per_transaction ON refunds (merchant_id, transaction_id)
    WHERE status NOT IN ('REFUSED', 'NOT_SENT');

-- +goose Down
-- A refund not sent reads as refused (no money moved) in the older schema.
UPDATE refunds SET status = 'REFUSED' WHERE status = 'NOT_SENT';
DROP INDEX refunds_one_per_transaction;
CREATE UNIQUE INDEX refunds_one_per_transaction ON refunds (merchant_id, transaction_id) WHERE status <> 'REFUSED';
ALTER TABLE refunds DROP CONSTRAINT refunds_status_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_status_check CHECK (status IN ('REQUESTED', 'REFUNDED', 'REFUSED', 'UNKNOWN'));
