-- +goose Up
-- The list's total comes from transaction_daily_totals, which also counts
-- transactions whose push is in flight; the list does not show those, so
-- it takes them out, found through this index of only those rows (a
-- handful at any time: a push is in flight for seconds).
CREATE INDEX transactions_in_flight ON transactions (merchant_id, created_at) WHERE push_in_flight;

-- +goose Down
DROP INDEX transactions_in_flight;
