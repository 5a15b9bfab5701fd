-- +goose Up
-- A payment's refunds are read by merchant and transaction (its page, the
-- reconciliation page, the CLI). The only index on those columns leaves
-- out REFUSED refunds, so it cannot answer that read, which scanned the
-- whole table.
CREATE INDEX refunds_by_transaction ON refunds (merchant_id, transaction_id);

-- +goose Down
DROP INDEX refunds_by_transaction;
