-- +goose Up
-- The dashboard's tables; the SQLite migration of the same number explains
-- each one.
CREATE TABLE users (
    id            UUID PRIMARY KEY,
    merchant_id   UUID NOT NULL REFERENCES merchants (id),
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('owner', 'developer', 'viewer')),
    language      TEXT NOT NULL DEFAULT '' CHECK (language IN ('', 'en', 'fr')),
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX users_merchant ON users (merchant_id, created_at);

INSERT INTO users (id, merchant_id, email, password_hash, role, language, created_at)
    SELECT id, id, email, password_hash, 'owner', '', created_at FROM merchants;

CREATE TABLE sessions (
    jti          TEXT PRIMARY KEY,
    user_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    merchant_id  UUID NOT NULL REFERENCES merchants (id),
    created_at   TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    revoked_at   TIMESTAMPTZ
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE audit_log (
    id          UUID PRIMARY KEY,
    merchant_id UUID NOT NULL REFERENCES merchants (id),
    user_id     UUID,
    email       TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL,
    address     TEXT NOT NULL,
    at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX audit_log_merchant_at ON audit_log (merchant_id, at DESC, id DESC);
-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE transaction_daily_totals (
    merchant_id UUID NOT NULL REFERENCES merchants (id),
    day         TEXT NOT NULL,
    status      TEXT NOT NULL,
    operator    TEXT NOT NULL,
    count       BIGINT NOT NULL,
    amount      BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, day, status, operator)
);
INSERT INTO transaction_daily_totals (merchant_id, day, status, operator, count, amount)
    SELECT merchant_id, to_char((created_at AT TIME ZONE 'UTC') + interval '1 hour', 'YYYY-MM-DD'), status, operator, COUNT(*), SUM(amount)
    FROM transactions GROUP BY 1, 2, 3, 4;

-- The overview's alerts count these per merchant without reading the rest.
CREATE INDEX webhook_deliveries_undelivered ON webhook_deliveries (merchant_id) WHERE state = 'undelivered';
CREATE INDEX reconciliation_cases_merchant ON reconciliation_cases (merchant_id, created_at);

-- +goose Down
DROP INDEX reconciliation_cases_merchant;
DROP INDEX webhook_deliveries_undelivered;
DROP TABLE transaction_daily_totals;
DROP TABLE settings;
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
DROP TABLE sessions;
DROP TABLE users;
