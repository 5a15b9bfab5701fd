-- +goose Up
-- The dashboard: the people who sign in, their sessions, what they did,
-- settings shared by every instance, and per-day totals for the overview.

-- users: the people of a merchant who sign in to the dashboard. An email
-- signs in to one merchant only, so it is unique across merchants. role is
-- owner, developer or viewer (internal/team says what each may do);
-- language is 'en', 'fr', or '' for the browser's choice.
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    merchant_id   TEXT NOT NULL REFERENCES merchants (id),
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('owner', 'developer', 'viewer')),
    language      TEXT NOT NULL DEFAULT '' CHECK (language IN ('', 'en', 'fr')),
    created_at    TEXT NOT NULL
);
CREATE INDEX users_merchant ON users (merchant_id, created_at);

-- Each merchant's login so far (its email and password) becomes its owner,
-- with the merchant's id as the user id: no id needs inventing in SQL.
INSERT INTO users (id, merchant_id, email, password_hash, role, language, created_at)
    SELECT id, id, email, password_hash, 'owner', '', created_at FROM merchants;

-- sessions: one row per signed-in browser, named by the JWT's jti. A token
-- is honoured only while its row is neither revoked nor past expires_at
-- (the absolute lifetime) nor idle since last_seen_at for too long.
CREATE TABLE sessions (
    jti          TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    created_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    revoked_at   TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);

-- audit_log: who did what, append-only (the triggers refuse changes).
-- user_id is NULL when no user is known (a failed sign-in names the
-- address only); it is kept as text, not a reference, so removing a user
-- keeps their history.
CREATE TABLE audit_log (
    id          TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    user_id     TEXT,
    email       TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL,
    address     TEXT NOT NULL,
    at          TEXT NOT NULL
);
CREATE INDEX audit_log_merchant_at ON audit_log (merchant_id, at DESC, id DESC);
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
-- +goose StatementEnd

-- settings: values every instance shares, such as the sandbox's generated
-- session signing secret.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- transaction_daily_totals: per merchant, per day of creation in
-- N'Djamena time (UTC+1, no daylight saving), per status and operator, the
-- number of transactions and their amount. The transaction store keeps it
-- in the same database transaction as each insert, settlement and delete,
-- so the overview reads a few dozen rows instead of every transaction.
CREATE TABLE transaction_daily_totals (
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    day         TEXT NOT NULL,
    status      TEXT NOT NULL,
    operator    TEXT NOT NULL,
    count       INTEGER NOT NULL,
    amount      INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, day, status, operator)
);
INSERT INTO transaction_daily_totals (merchant_id, day, status, operator, count, amount)
    SELECT merchant_id, date(created_at, '+1 hour'), status, operator, COUNT(*), SUM(amount)
    FROM transactions GROUP BY merchant_id, date(created_at, '+1 hour'), status, operator;

-- The overview's alerts count these per merchant without reading the rest.
CREATE INDEX webhook_deliveries_undelivered ON webhook_deliveries (merchant_id) WHERE state = 'undelivered';
CREATE INDEX reconciliation_cases_merchant ON reconciliation_cases (merchant_id, created_at);

-- +goose Down
DROP INDEX reconciliation_cases_merchant;
DROP INDEX webhook_deliveries_undelivered;
DROP TABLE transaction_daily_totals;
DROP TABLE settings;
DROP TRIGGER audit_log_no_delete;
DROP TRIGGER audit_log_no_update;
DROP TABLE audit_log;
DROP TABLE sessions;
DROP TABLE users;
