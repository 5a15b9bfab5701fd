package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/team"
)

// AuditLog keeps who did what in each merchant's dashboard. It only ever
// appends: the table's triggers refuse updates and deletes.
type AuditLog struct{ db *DB }

// NewAuditLog returns the audit log store.
func NewAuditLog(db *DB) *AuditLog { return &AuditLog{db: db} }

// Append adds an entry; its ID is drawn here.
func (s *AuditLog) Append(ctx context.Context, e team.AuditEntry) error {
	return appendAudit(ctx, s.db, s.db, e)
}

// appendAudit adds an entry through ex: the database, or the transaction
// of the change it records (a refund), so both commit together.
func appendAudit(ctx context.Context, db *DB, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, e team.AuditEntry) error {
	var user any
	if e.UserID != "" {
		user = e.UserID
	}
	_, err := ex.ExecContext(ctx, `INSERT INTO audit_log (id, merchant_id, user_id, email, action, target, address, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		uuid.NewString(), e.MerchantID, user, e.Email, e.Action, e.Target, e.Address, db.Time(e.At))
	return err
}

// List returns up to limit of a merchant's entries, newest first, older
// than the entry before (its At and ID; zero values start at the newest).
func (s *AuditLog) List(ctx context.Context, merchantID string, before time.Time, beforeID string, limit int) ([]team.AuditEntry, error) {
	if before.IsZero() {
		before, beforeID = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), ""
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT id, merchant_id, user_id, email, action, target, address, at FROM audit_log
		WHERE merchant_id = $1 AND (at < $2 OR (at = $2 AND $3 <> '' AND CAST(id AS TEXT) < $3))
		ORDER BY at DESC, id DESC LIMIT $4`, merchantID, s.db.Time(before), beforeID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []team.AuditEntry{}
	for rows.Next() {
		var e team.AuditEntry
		var user sql.NullString
		var at Timestamp
		if err := rows.Scan(&e.ID, &e.MerchantID, &user, &e.Email, &e.Action, &e.Target, &e.Address, &at); err != nil {
			return nil, err
		}
		e.UserID, e.At = user.String, at.Time
		out = append(out, e)
	}
	return out, rows.Err()
}
