package webhook

import (
	"context"
	"database/sql"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// Enqueue is the transactional outbox: store.Transactions calls it (as
// OnSettled) inside the database transaction that settles t. For a status
// with an event (SUCCESS, FAILED, TIMEOUT; never EXPIRED) it writes one
// pending delivery per enabled endpoint of the merchant, due at once, in
// tx, and reports whether it wrote any: the store then calls Wake once tx
// has committed. So a delivery exists if and only if the state change
// committed: none is lost when the process dies right after, and none is
// sent for a change that rolled back.
//
// Every statement goes through tx: on SQLite the settling transaction holds
// the only connection, and a query outside it would wait for itself.
func (s *Service) Enqueue(ctx context.Context, tx *sql.Tx, t *payment.Transaction) (queued bool, err error) {
	event := t.Status.Event()
	if event == "" {
		return false, nil
	}
	endpoints, err := activeEndpoints(ctx, tx, t.MerchantID)
	if err != nil || len(endpoints) == 0 {
		return false, err
	}
	payload, err := eventPayload(event, t)
	if err != nil {
		return false, err
	}
	at := s.db.Time(t.UpdatedAt)
	for _, endpointID := range endpoints {
		id := uuid.NewString()
		// The unique key (merchant, endpoint, event, transaction) makes the
		// delivery id one per (event, endpoint); a second settle of the same
		// transaction cannot happen, but would add nothing if it did.
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries
			(id, merchant_id, endpoint_id, event, transaction_id, payload, state, attempts, next_attempt_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, $8, $8)
			ON CONFLICT (merchant_id, endpoint_id, event, transaction_id) DO NOTHING`,
			id, t.MerchantID, endpointID, event, t.ID, string(payload), string(StatePending), at)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return false, err
		} else if n > 0 {
			queued = true
		}
	}
	return queued, nil
}

// activeEndpoints lists the ids of the endpoints that receive new events.
// The rows are read to the end before the caller writes: PostgreSQL cannot
// run a statement on a connection that still streams a result.
func activeEndpoints(ctx context.Context, tx *sql.Tx, merchantID string) ([]string, error) {
	return scanIDs(tx.QueryContext(ctx, `SELECT id FROM webhook_endpoints
		WHERE merchant_id = $1 AND enabled = TRUE AND deleted_at IS NULL ORDER BY created_at, id`, merchantID))
}
