package store

import (
	"context"

	"github.com/momopay/momopay/internal/payment"
)

// ReconciliationCases lists late operator outcomes (payment.Store.Settle
// writes them inside its own transaction).
type ReconciliationCases struct{ db *DB }

// NewReconciliationCases returns the reconciliation store.
func NewReconciliationCases(db *DB) *ReconciliationCases { return &ReconciliationCases{db: db} }

// List returns every case, oldest first. It is an operator's view across
// merchants, used by `momopay reconcile list`.
func (s *ReconciliationCases) List(ctx context.Context) ([]payment.ReconciliationCase, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, merchant_id, transaction_id, final_status, reported_status, source, detail, created_at
		FROM reconciliation_cases ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []payment.ReconciliationCase{}
	for rows.Next() {
		var c payment.ReconciliationCase
		var created Timestamp
		if err := rows.Scan(&c.ID, &c.MerchantID, &c.TransactionID, &c.FinalStatus, &c.ReportedStatus, &c.Source, &c.Detail, &created); err != nil {
			return nil, err
		}
		c.CreatedAt = created.Time
		out = append(out, c)
	}
	return out, rows.Err()
}
