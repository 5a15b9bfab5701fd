-- +goose Up
-- The totals rows get a shard, as on PostgreSQL, so that both engines
-- share the statements that write and read them. SQLite has one writer and
-- nothing to queue on, so it only ever writes shard 0 (store.addToTotals).
-- SQLite cannot change a primary key: the table is rebuilt.
CREATE TABLE transaction_daily_totals_new (
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    day         TEXT NOT NULL,
    status      TEXT NOT NULL,
    operator    TEXT NOT NULL,
    shard       INTEGER NOT NULL DEFAULT 0,
    count       INTEGER NOT NULL,
    amount      INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, day, status, operator, shard)
);
INSERT INTO transaction_daily_totals_new (merchant_id, day, status, operator, shard, count, amount)
    SELECT merchant_id, day, status, operator, 0, count, amount FROM transaction_daily_totals;
DROP TABLE transaction_daily_totals;
ALTER TABLE transaction_daily_totals_new RENAME TO transaction_daily_totals;

-- +goose Down
CREATE TABLE transaction_daily_totals_old (
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    day         TEXT NOT NULL,
    status      TEXT NOT NULL,
    operator    TEXT NOT NULL,
    count       INTEGER NOT NULL,
    amount      INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, day, status, operator)
);
INSERT INTO transaction_daily_totals_old (merchant_id, day, status, operator, count, amount)
    SELECT merchant_id, day, status, operator, SUM(count), SUM(amount) FROM transaction_daily_totals
    GROUP BY merchant_id, day, status, operator;
DROP TABLE transaction_daily_totals;
ALTER TABLE transaction_daily_totals_old RENAME TO transaction_daily_totals;
