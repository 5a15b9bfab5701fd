-- +goose Up
-- The webhook dispatcher takes each endpoint's oldest due deliveries, at
-- most ten per endpoint (internal/webhook/due.go). Walking every pending
-- delivery by next_attempt_at instead made one look cost the whole
-- backlog of an endpoint or merchant at its bound: a merchant with
-- 200,000 deliveries waiting for receivers that never answer kept a core
-- busy and delayed every other merchant's webhooks by seconds.
-- The index by next_attempt_at alone goes: nothing else needs its order
-- (the queue's metrics count every pending delivery), and left beside this
-- one, PostgreSQL's planner took it for one endpoint's deliveries when
-- another endpoint held most of them, walking that backlog again.
CREATE INDEX webhook_deliveries_pending_endpoint ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';
DROP INDEX webhook_deliveries_pending_next;

-- +goose Down
CREATE INDEX webhook_deliveries_pending_next ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
DROP INDEX webhook_deliveries_pending_endpoint;
