-- +goose Up
-- Same tables as the SQLite schema, with native UUID and TIMESTAMPTZ types.
CREATE TABLE merchants (
    id            UUID PRIMARY KEY,
    name          TEXT NOT NULL,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    id           UUID PRIMARY KEY,
    merchant_id  UUID NOT NULL REFERENCES merchants (id),
    prefix       TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);
CREATE INDEX api_keys_merchant ON api_keys (merchant_id, created_at);

CREATE TABLE transactions (
    id           UUID PRIMARY KEY,
    merchant_id  UUID NOT NULL REFERENCES merchants (id),
    reference    TEXT NOT NULL,
    internal_ref TEXT NOT NULL UNIQUE,
    amount       BIGINT NOT NULL CHECK (amount >= 100),
    currency     TEXT NOT NULL CHECK (currency = 'XAF'),
    operator     TEXT NOT NULL CHECK (operator IN ('AIRTEL', 'MOOV')),
    phone_number TEXT NOT NULL,
    description  TEXT,
    status       TEXT NOT NULL CHECK (status IN ('PENDING', 'SUCCESS', 'FAILED', 'TIMEOUT', 'EXPIRED')),
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (merchant_id, reference)
);
CREATE INDEX transactions_merchant_created ON transactions (merchant_id, created_at DESC, id DESC);

CREATE TABLE reconciliation_cases (
    id              UUID PRIMARY KEY,
    merchant_id     UUID NOT NULL REFERENCES merchants (id),
    transaction_id  UUID NOT NULL REFERENCES transactions (id),
    final_status    TEXT NOT NULL,
    reported_status TEXT NOT NULL,
    source          TEXT NOT NULL,
    detail          TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX reconciliation_cases_created ON reconciliation_cases (created_at);

CREATE TABLE webhook_endpoints (
    id          UUID PRIMARY KEY,
    merchant_id UUID NOT NULL REFERENCES merchants (id),
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    enabled     BOOLEAN NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    deleted_at  TIMESTAMPTZ
);
CREATE INDEX webhook_endpoints_merchant ON webhook_endpoints (merchant_id);

CREATE TABLE webhook_deliveries (
    id              UUID PRIMARY KEY,
    merchant_id     UUID NOT NULL REFERENCES merchants (id),
    endpoint_id     UUID NOT NULL REFERENCES webhook_endpoints (id),
    event           TEXT NOT NULL,
    transaction_id  UUID NOT NULL REFERENCES transactions (id),
    payload         TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'undelivered')),
    attempts        INTEGER NOT NULL,
    next_attempt_at TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (merchant_id, endpoint_id, event, transaction_id)
);
CREATE INDEX webhook_deliveries_merchant ON webhook_deliveries (merchant_id, created_at DESC);

CREATE TABLE webhook_attempts (
    id               UUID PRIMARY KEY,
    merchant_id      UUID NOT NULL REFERENCES merchants (id),
    delivery_id      UUID NOT NULL REFERENCES webhook_deliveries (id),
    number           INTEGER NOT NULL,
    manual           BOOLEAN NOT NULL,
    attempted_at     TIMESTAMPTZ NOT NULL,
    status_code      INTEGER,
    error            TEXT NOT NULL,
    latency_ms       INTEGER NOT NULL,
    response_excerpt TEXT NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempted_at);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
DROP TABLE reconciliation_cases;
DROP TABLE transactions;
DROP TABLE api_keys;
DROP TABLE merchants;
