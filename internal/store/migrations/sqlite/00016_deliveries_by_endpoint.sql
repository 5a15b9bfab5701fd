-- +goose Up
-- The webhook dispatcher takes each endpoint's oldest due deliveries, at
-- most ten per endpoint (internal/webhook/due.go). Walking every pending
-- delivery by next_attempt_at instead made one look cost the whole
-- backlog of an endpoint or merchant at its bound: a merchant with
-- 200,000 deliveries waiting for receivers that never answer kept a core
-- busy and delayed every other merchant's webhooks by seconds.
CREATE INDEX webhook_deliveries_pending_endpoint ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_pending_endpoint;
