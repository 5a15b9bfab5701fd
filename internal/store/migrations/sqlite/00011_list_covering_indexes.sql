-- +goose Up
-- A deep list page skips OFFSET rows of one day before its own. With the
-- indexes of 00001 and 00002 every skipped row cost a read of the table
-- row too, for the conditions the index did not hold (push_in_flight, and
-- the operator or the status). These indexes hold every listed row's
-- conditions, only for listed rows (a push in flight is never listed), so
-- the page's ids are found, and the skipped rows passed over, in the index
-- alone; only the page's own rows are then read (store.ListTransactions).
-- They replace 00002's, which nothing else reads.
CREATE INDEX transactions_listed ON transactions (merchant_id, created_at DESC, id DESC, status, operator) WHERE NOT push_in_flight;
CREATE INDEX transactions_listed_status ON transactions (merchant_id, status, created_at DESC, id DESC, operator) WHERE NOT push_in_flight;
CREATE INDEX transactions_listed_operator ON transactions (merchant_id, operator, created_at DESC, id DESC, status) WHERE NOT push_in_flight;
DROP INDEX transactions_merchant_status_created;
DROP INDEX transactions_merchant_operator_created;

-- +goose Down
CREATE INDEX transactions_merchant_status_created ON transactions (merchant_id, status, created_at DESC, id DESC);
CREATE INDEX transactions_merchant_operator_created ON transactions (merchant_id, operator, created_at DESC, id DESC);
DROP INDEX transactions_listed_operator;
DROP INDEX transactions_listed_status;
DROP INDEX transactions_listed;
