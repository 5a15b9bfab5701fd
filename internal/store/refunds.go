package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// Refunds implements payment.RefundStore: the refunds table and the
// merchants' auto-refund policy.
type Refunds struct{ db *DB }

// NewRefunds returns the refund store.
func NewRefunds(db *DB) *Refunds { return &Refunds{db: db} }

// AutoRefundLateSuccess implements payment.RefundStore.
func (s *Refunds) AutoRefundLateSuccess(ctx context.Context, merchantID string) (bool, error) {
	var on bool
	err := s.db.QueryRowContext(ctx, `SELECT auto_refund_late_success FROM merchants WHERE id = $1`, merchantID).Scan(&on)
	if errors.Is(err, sql.ErrNoRows) {
		return false, payment.Errorf(payment.ENOTFOUND, "merchant not found")
	}
	return on, err
}

// SetAutoRefundLateSuccess sets the merchant's policy and reports whether
// that changed it (a policy set to what it was is nothing for the audit
// log); ENOTFOUND for an unknown merchant.
func (s *Refunds) SetAutoRefundLateSuccess(ctx context.Context, merchantID string, on bool) (changed bool, err error) {
	if !payment.ValidID(merchantID) {
		return false, payment.Errorf(payment.ENOTFOUND, "merchant not found")
	}
	res, err := s.db.ExecContext(ctx, `UPDATE merchants SET auto_refund_late_success = $1 WHERE id = $2 AND auto_refund_late_success <> $1`, on, merchantID)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return true, nil
	}
	var exists bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM merchants WHERE id = $1)`, merchantID).Scan(&exists); err != nil {
		return false, err
	}
	if !exists {
		return false, payment.Errorf(payment.ENOTFOUND, "merchant not found")
	}
	return false, nil
}

// PaidByOperator implements payment.RefundStore.
func (s *Refunds) PaidByOperator(ctx context.Context, merchantID, transactionID string) (bool, error) {
	var paid bool
	err := s.db.QueryRowContext(ctx, `SELECT status = 'SUCCESS' OR EXISTS (
			SELECT 1 FROM reconciliation_cases c
			WHERE c.merchant_id = t.merchant_id AND c.transaction_id = t.id AND c.reported_status = 'SUCCESS')
		FROM transactions t WHERE t.merchant_id = $1 AND t.id = $2`, merchantID, transactionID).Scan(&paid)
	if errors.Is(err, sql.ErrNoRows) {
		return false, payment.ErrNotFound
	}
	return paid, err
}

// StartRefund implements payment.RefundStore.
func (s *Refunds) StartRefund(ctx context.Context, r *payment.Refund) error {
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO refunds
			(id, merchant_id, transaction_id, amount, requested_by, status, operator_code, operator_detail, operator_ref, requested_at)
			VALUES ($1, $2, $3, $4, $5, $6, '', '', '', $7)`,
			r.ID, r.MerchantID, r.TransactionID, r.Amount, r.RequestedBy, string(r.Status), s.db.Time(r.RequestedAt))
		if err != nil {
			return err
		}
		return appendAudit(ctx, s.db, tx, refundAudit(r, team.ActionRefundRequested, r.RequestedAt,
			fmt.Sprintf("transaction %s: refund %s of %d XAF asked of the operator (asked by %s)", r.TransactionID, r.ID, r.Amount, r.RequestedBy)))
	})
	if IsUniqueViolation(err, "refunds") {
		return payment.ErrRefundExists
	}
	return err
}

// FinishRefund implements payment.RefundStore.
func (s *Refunds) FinishRefund(ctx context.Context, r *payment.Refund) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE refunds SET status = $1, operator_code = $2, operator_detail = $3,
			operator_ref = $4, answered_at = $5 WHERE merchant_id = $6 AND id = $7`,
			string(r.Status), r.OperatorCode, operator.Clip(r.OperatorDetail, 500), r.OperatorRef, s.db.NullTime(r.AnsweredAt), r.MerchantID, r.ID)
		if err != nil {
			return err
		}
		return appendAudit(ctx, s.db, tx, refundAudit(r, team.ActionRefundAnswered, r.AnsweredAt,
			fmt.Sprintf("transaction %s: refund %s of %d XAF, %s (operator code %s)", r.TransactionID, r.ID, r.Amount, r.Status, cmp.Or(r.OperatorCode, "none"))))
	})
}

// refundAudit is the audit entry of a step of a refund, in the name of
// whoever asked for it.
func refundAudit(r *payment.Refund, action string, at time.Time, target string) team.AuditEntry {
	return team.AuditEntry{MerchantID: r.MerchantID, Email: r.Actor.Name, Address: r.Actor.Address, Action: action, Target: target, At: at}
}

// List returns the merchant's refunds of the given transactions, oldest
// first, in one query (the reconciliation page asks for all its cases'
// payments at once). Ids that are not the merchant's, or not ids, have none.
func (s *Refunds) List(ctx context.Context, merchantID string, transactionIDs ...string) ([]payment.Refund, error) {
	args := []any{merchantID}
	marks := make([]string, 0, len(transactionIDs))
	for _, id := range transactionIDs {
		if payment.ValidID(id) {
			args = append(args, id)
			marks = append(marks, fmt.Sprintf("$%d", len(args)))
		}
	}
	if len(marks) == 0 {
		return nil, nil
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT id, merchant_id, transaction_id, amount, requested_by, status,
		operator_code, operator_detail, operator_ref, requested_at, answered_at
		FROM refunds WHERE merchant_id = $1 AND transaction_id IN (`+strings.Join(marks, ", ")+`)
		ORDER BY requested_at, id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []payment.Refund
	for rows.Next() {
		var r payment.Refund
		var requested, answered Timestamp
		if err := rows.Scan(&r.ID, &r.MerchantID, &r.TransactionID, &r.Amount, &r.RequestedBy, &r.Status,
			&r.OperatorCode, &r.OperatorDetail, &r.OperatorRef, &requested, &answered); err != nil {
			return nil, err
		}
		r.RequestedAt, r.AnsweredAt = requested.Time, answered.Time
		out = append(out, r)
	}
	return out, rows.Err()
}
