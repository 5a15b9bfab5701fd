-- +goose Up
-- The list endpoint filters a merchant's transactions by status and/or
-- operator and pages them newest first; these let both the count and the
-- page come from an index instead of a scan of every row of the merchant.
CREATE INDEX transactions_merchant_status_created ON transactions (merchant_id, status, created_at DESC, id DESC);
CREATE INDEX transactions_merchant_operator_created ON transactions (merchant_id, operator, created_at DESC, id DESC);

-- +goose Down
DROP INDEX transactions_merchant_operator_created;
DROP INDEX transactions_merchant_status_created;
