-- +goose Up
-- A transaction is inserted before its push is sent, so that no push is ever
-- sent for a payment we could lose; push_in_flight is TRUE until the push is
-- taken (or its answer was ambiguous), and a refused push deletes the row.
-- A concurrent create with the same reference that meets such a row waits
-- for the push instead of naming a transaction that may vanish.
ALTER TABLE transactions ADD COLUMN push_in_flight BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE transactions DROP COLUMN push_in_flight;
