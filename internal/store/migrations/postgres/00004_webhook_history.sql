-- +goose Up
-- Webhook history that survives a crash, test events in the history, and
-- one endpoint per URL. The SQLite migration of the same number explains
-- each column.
ALTER TABLE webhook_attempts ADD COLUMN stage TEXT NOT NULL DEFAULT 'done'
    CHECK (stage IN ('sending', 'done', 'interrupted'));

ALTER TABLE webhook_endpoints ADD COLUMN url_key TEXT;
CREATE UNIQUE INDEX webhook_endpoints_url_key ON webhook_endpoints (merchant_id, url_key)
    WHERE deleted_at IS NULL;

ALTER TABLE webhook_deliveries ALTER COLUMN transaction_id DROP NOT NULL;
ALTER TABLE webhook_deliveries ADD COLUMN test BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE webhook_deliveries ADD COLUMN lease_until TIMESTAMPTZ;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_test_has_no_transaction
    CHECK (test = (transaction_id IS NULL));

-- +goose Down
DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE test);
DELETE FROM webhook_deliveries WHERE test;
UPDATE webhook_deliveries SET next_attempt_at = greatest(next_attempt_at, lease_until) WHERE lease_until IS NOT NULL;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_test_has_no_transaction;
ALTER TABLE webhook_deliveries DROP COLUMN lease_until;
ALTER TABLE webhook_deliveries DROP COLUMN test;
ALTER TABLE webhook_deliveries ALTER COLUMN transaction_id SET NOT NULL;
DROP INDEX webhook_endpoints_url_key;
ALTER TABLE webhook_endpoints DROP COLUMN url_key;
ALTER TABLE webhook_attempts DROP COLUMN stage;
