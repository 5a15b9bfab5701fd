-- +goose Up
-- Settings of the service itself, kept with its data. 'mode' = 'live' is
-- written the first time the database serves in live mode: from then on a
-- command run in sandbox mode (MOMOPAY_MODE forgotten) is refused, where it
-- would have answered live payments with the simulators ("sandbox confirm"
-- settling a real payment SUCCESS with no money taken).
CREATE TABLE service_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE service_settings;
