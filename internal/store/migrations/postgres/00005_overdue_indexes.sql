-- +goose Up
-- Every process sweeps every few seconds for PENDING payments past
-- expires_at and for pending webhook deliveries whose next attempt is
-- overdue (work a killed process was holding; internal/jobs Sweeper).
-- These partial indexes hold only the rows still in play, so each sweep
-- reads the few overdue rows instead of scanning every payment and delivery.
CREATE INDEX transactions_pending_expires ON transactions (expires_at) WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_pending_next ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_pending_next;
DROP INDEX transactions_pending_expires;
