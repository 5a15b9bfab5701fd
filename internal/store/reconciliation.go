package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// ReconciliationCases lists late operator outcomes (payment.Store.Settle
// writes them inside its own transaction) and records their resolution.
type ReconciliationCases struct{ db *DB }

// NewReconciliationCases returns the reconciliation store.
func NewReconciliationCases(db *DB) *ReconciliationCases { return &ReconciliationCases{db: db} }

// ErrCaseNotFound: no such reconciliation case for this merchant.
var ErrCaseNotFound = &payment.Error{Code: payment.ENOTFOUND, Message: "reconciliation case not found"}

const caseColumns = `id, merchant_id, transaction_id, final_status, reported_status, source, detail, created_at,
	resolved_at, resolved_by, resolution_note`

func scanCase(row interface{ Scan(...any) error }) (*payment.ReconciliationCase, error) {
	var c payment.ReconciliationCase
	var created, resolved Timestamp
	var by, note sql.NullString
	err := row.Scan(&c.ID, &c.MerchantID, &c.TransactionID, &c.FinalStatus, &c.ReportedStatus, &c.Source, &c.Detail, &created,
		&resolved, &by, &note)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrCaseNotFound
	}
	if err != nil {
		return nil, err
	}
	c.CreatedAt, c.ResolvedBy, c.ResolutionNote = created.Time, by.String, note.String
	if !resolved.IsZero() {
		c.ResolvedAt = &resolved.Time
	}
	return &c, nil
}

// List returns every case, oldest first. It is an operator's view across
// merchants, used by `momopay reconcile list`.
func (s *ReconciliationCases) List(ctx context.Context) ([]payment.ReconciliationCase, error) {
	return s.query(ctx, `SELECT `+caseColumns+` FROM reconciliation_cases ORDER BY created_at, id`)
}

// MaxCases bounds one listing of a merchant's cases.
const MaxCases = 200

// ForMerchant lists the merchant's cases (only those not resolved yet when
// openOnly), newest first, at most MaxCases.
func (s *ReconciliationCases) ForMerchant(ctx context.Context, merchantID string, openOnly bool) ([]payment.ReconciliationCase, error) {
	return s.ForMerchantPage(ctx, merchantID, openOnly, "", MaxCases)
}

// ForMerchantPage lists at most limit (1 to MaxCases) of the merchant's
// cases (only those not resolved yet when openOnly), newest first, after
// the case before (an id the previous page ended with; "" for the newest).
// A before that is not one of the merchant's cases gives no case: the
// page it followed cannot be continued.
func (s *ReconciliationCases) ForMerchantPage(ctx context.Context, merchantID string, openOnly bool, before string, limit int) ([]payment.ReconciliationCase, error) {
	if !payment.ValidID(merchantID) || (before != "" && !payment.ValidID(before)) {
		return []payment.ReconciliationCase{}, nil
	}
	limit = min(max(limit, 1), MaxCases)
	where, args := []string{"c.merchant_id = $1"}, []any{merchantID, limit}
	if openOnly {
		where = append(where, "c.resolved_at IS NULL")
	}
	if before != "" {
		args = append(args, before)
		// The same order as ORDER BY, compared column by column (SQLite
		// has row values too, but this reads the same on both).
		where = append(where, `EXISTS (SELECT 1 FROM reconciliation_cases b WHERE b.merchant_id = c.merchant_id AND b.id = $3
			AND (c.created_at < b.created_at OR (c.created_at = b.created_at AND c.id < b.id)))`)
	}
	return s.query(ctx, fmt.Sprintf(`SELECT %s FROM reconciliation_cases c WHERE %s
		ORDER BY c.created_at DESC, c.id DESC LIMIT $2`, caseColumns, strings.Join(where, " AND ")), args...)
}

// CountOpen returns how many of the merchant's cases wait for a person.
func (s *ReconciliationCases) CountOpen(ctx context.Context, merchantID string) (int, error) {
	if !payment.ValidID(merchantID) {
		return 0, nil
	}
	var n int
	err := s.db.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM reconciliation_cases
		WHERE merchant_id = $1 AND resolved_at IS NULL`, merchantID).Scan(&n)
	return n, err
}

// Case returns one of the merchant's cases, or ErrCaseNotFound.
func (s *ReconciliationCases) Case(ctx context.Context, merchantID, id string) (*payment.ReconciliationCase, error) {
	if !payment.ValidID(merchantID) || !payment.ValidID(id) {
		return nil, ErrCaseNotFound
	}
	return scanCase(s.db.Reader().QueryRowContext(ctx, `SELECT `+caseColumns+` FROM reconciliation_cases
		WHERE merchant_id = $1 AND id = $2`, merchantID, id))
}

// Resolve closes one of the merchant's open cases with a note (checked by
// payment.ValidateResolution) and who closed it. A case resolved already
// gives a payment.EUNPROCESSABLE error naming who did it: two people
// working the same case must not overwrite each other's note.
func (s *ReconciliationCases) Resolve(ctx context.Context, merchantID, id, by, note string, at time.Time) (*payment.ReconciliationCase, error) {
	// Another merchant's case is not found, whatever the note says.
	if _, err := s.Case(ctx, merchantID, id); err != nil {
		return nil, err
	}
	if err := payment.ValidateResolution(note); err != nil {
		return nil, err
	}
	c, err := scanCase(s.db.QueryRowContext(ctx, `UPDATE reconciliation_cases
		SET resolved_at = $3, resolved_by = $4, resolution_note = $5
		WHERE merchant_id = $1 AND id = $2 AND resolved_at IS NULL
		RETURNING `+caseColumns, merchantID, id, s.db.Time(at), by, note))
	if !errors.Is(err, ErrCaseNotFound) {
		return c, err
	}
	c, err = s.Case(ctx, merchantID, id)
	if err != nil {
		return nil, err
	}
	return nil, payment.Refuse(payment.EUNPROCESSABLE, payment.ErrCaseResolved, "this case was resolved already by %s", c.ResolvedBy)
}

func (s *ReconciliationCases) query(ctx context.Context, q string, args ...any) ([]payment.ReconciliationCase, error) {
	rows, err := s.db.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []payment.ReconciliationCase{}
	for rows.Next() {
		c, err := scanCase(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *c)
	}
	return out, rows.Err()
}
