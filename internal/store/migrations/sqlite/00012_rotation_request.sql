-- +goose Up
-- The token of the dashboard form that last rotated an endpoint's secret
-- (webhook.Service.RotateSecret): the same form sent again (a reload of
-- the page showing the new secret) rotates nothing, where a second
-- rotation would have dropped at once the secret the merchant's server
-- still checks signatures with.
ALTER TABLE webhook_endpoints ADD COLUMN rotation_request TEXT;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN rotation_request;
