-- +goose Up
-- A refund that certainly never reached the operator (it could not be
-- connected to, or its access token could not be had) is NOT_SENT: no
-- money moved, and, like a REFUSED one, it does not stop the payment being
-- refunded again. Before, it was UNKNOWN, which blocks a second refund for
-- good and sends a person to the operator's portal for nothing.
--
-- SQLite cannot change a CHECK in place: the table is made again with the
-- new one (no table refers to refunds, and none has triggers on it).
CREATE TABLE refunds_new (
    id              TEXT PRIMARY KEY,
    merchant_id     TEXT NOT NULL REFERENCES merchants (id),
    transaction_id  TEXT NOT NULL REFERENCES transactions (id),
    amount          INTEGER NOT NULL,
    requested_by    TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('REQUESTED', 'REFUNDED', 'REFUSED', 'UNKNOWN', 'NOT_SENT')),
    operator_code   TEXT NOT NULL,
    operator_detail TEXT NOT NULL,
    operator_ref    TEXT NOT NULL,
    requested_at    TEXT NOT NULL,
    answered_at     TEXT
);
INSERT INTO refunds_new SELECT id, merchant_id, transaction_id, amount, requested_by, status,
    operator_code, operator_detail, operator_ref, requested_at, answered_at FROM refunds;
DROP TABLE refunds;
ALTER TABLE refunds_new RENAME TO refunds;
CREATE UNIQUE INDEX refunds_one_per_transaction ON refunds (merchant_id, transaction_id)
    WHERE status NOT IN ('REFUSED', 'NOT_SENT');
CREATE INDEX refunds_by_transaction ON refunds (merchant_id, transaction_id);

-- +goose Down
UPDATE refunds SET status = 'REFUSED' WHERE status = 'NOT_SENT';
CREATE TABLE refunds_old (
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
INSERT INTO refunds_old SELECT id, merchant_id, transaction_id, amount, requested_by, status,
    operator_code, operator_detail, operator_ref, requested_at, answered_at FROM refunds;
DROP TABLE refunds;
ALTER TABLE refunds_old RENAME TO refunds;
CREATE UNIQUE INDEX refunds_one_per_transaction ON refunds (merchant_id, transaction_id) WHERE status <> 'REFUSED';
CREATE INDEX refunds_by_transaction ON refunds (merchant_id, transaction_id);
