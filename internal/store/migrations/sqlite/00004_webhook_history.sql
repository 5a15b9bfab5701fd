-- +goose Up
-- Webhook history that survives a crash, test events in the history, and
-- one endpoint per URL.
--
-- webhook_attempts.stage: an attempt row is written as 'sending' in the
-- same transaction that claims the attempt, before the POST leaves, and
-- becomes 'done' with its outcome afterwards. A row a dead process left in
-- 'sending' becomes 'interrupted' when the next attempt is claimed. Rows
-- from before this migration were written after their outcome: 'done'.
ALTER TABLE webhook_attempts ADD COLUMN stage TEXT NOT NULL DEFAULT 'done'
    CHECK (stage IN ('sending', 'done', 'interrupted'));

-- webhook_endpoints.url_key is the URL normalised for comparison (scheme
-- and host lower-case, default port dropped): a merchant cannot register
-- one URL twice, which would double every delivery. Endpoints registered
-- before this migration have no key (they may hold duplicates already, which
-- a unique index would refuse); the service compares their URLs itself.
ALTER TABLE webhook_endpoints ADD COLUMN url_key TEXT;
CREATE UNIQUE INDEX webhook_endpoints_url_key ON webhook_endpoints (merchant_id, url_key)
    WHERE deleted_at IS NULL;

-- webhook_deliveries gains test (a test event, with no transaction: so
-- transaction_id becomes nullable) and lease_until (while an attempt is in
-- flight, apart from next_attempt_at, so that a manual attempt does not
-- move the automatic schedule). SQLite cannot drop NOT NULL in place, so
-- the table is rebuilt. webhook_attempts refers to it: with foreign keys
-- deferred, dropping the old table counts its attempts as orphans and
-- inserting the same ids into the new one counts them back, so the check at
-- commit passes exactly when every attempt still has its delivery.
PRAGMA defer_foreign_keys = ON;
CREATE TABLE webhook_deliveries_copy AS SELECT * FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    merchant_id     TEXT NOT NULL REFERENCES merchants (id),
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id),
    event           TEXT NOT NULL,
    transaction_id  TEXT REFERENCES transactions (id),
    test            BOOLEAN NOT NULL DEFAULT FALSE,
    payload         TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'undelivered')),
    attempts        INTEGER NOT NULL,
    next_attempt_at TEXT,
    lease_until     TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (merchant_id, endpoint_id, event, transaction_id),
    CHECK (test = (transaction_id IS NULL))
);
INSERT INTO webhook_deliveries
    (id, merchant_id, endpoint_id, event, transaction_id, test, payload, state, attempts, next_attempt_at, created_at, updated_at)
    SELECT id, merchant_id, endpoint_id, event, transaction_id, FALSE, payload, state, attempts, next_attempt_at, created_at, updated_at
    FROM webhook_deliveries_copy;
DROP TABLE webhook_deliveries_copy;
CREATE INDEX webhook_deliveries_merchant ON webhook_deliveries (merchant_id, created_at DESC);

-- +goose Down
DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE test);
DELETE FROM webhook_deliveries WHERE test;
PRAGMA defer_foreign_keys = ON;
CREATE TABLE webhook_deliveries_copy AS SELECT * FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    merchant_id     TEXT NOT NULL REFERENCES merchants (id),
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id),
    event           TEXT NOT NULL,
    transaction_id  TEXT NOT NULL REFERENCES transactions (id),
    payload         TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'undelivered')),
    attempts        INTEGER NOT NULL,
    next_attempt_at TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (merchant_id, endpoint_id, event, transaction_id)
);
INSERT INTO webhook_deliveries
    (id, merchant_id, endpoint_id, event, transaction_id, payload, state, attempts, next_attempt_at, created_at, updated_at)
    SELECT id, merchant_id, endpoint_id, event, transaction_id, payload, state, attempts, max(next_attempt_at, coalesce(lease_until, next_attempt_at)), created_at, updated_at
    FROM webhook_deliveries_copy;
DROP TABLE webhook_deliveries_copy;
CREATE INDEX webhook_deliveries_merchant ON webhook_deliveries (merchant_id, created_at DESC);
DROP INDEX webhook_endpoints_url_key;
ALTER TABLE webhook_endpoints DROP COLUMN url_key;
ALTER TABLE webhook_attempts DROP COLUMN stage;
