package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// A transaction's timeline (table transaction_events): each step is
// written by the store method that makes the change it describes, in the
// same database transaction, and read back oldest first.

// PushTaken implements payment.Store. The timeline step is written only by
// the call that cleared the flag, so a push is accepted once in it.
//
// On PostgreSQL it is one statement that commits asynchronously
// (RelaxedCommit): it is the second commit of every create, and the
// request waited for its WAL flush. Losing it, which only a crash of the
// database server within ~200 ms can do, leaves the flag set, and the flag
// already expires by itself (duplicates and the poller treat the push as
// taken once pushTimeout and its margin have passed).
func (s *Transactions) PushTaken(ctx context.Context, merchantID, id, operatorRef string, step payment.TransactionEvent) error {
	if !validIDs(merchantID, id) {
		return nil // no row whose flag is set
	}
	if s.db.Dialect == Postgres {
		_, err := s.db.ExecContext(ctx, `WITH `+RelaxedCommit+`, taken AS (
				UPDATE transactions SET push_in_flight = FALSE, operator_ref = COALESCE(NULLIF($9, ''), operator_ref)
				WHERE merchant_id = $1 AND id = $2 AND push_in_flight RETURNING merchant_id, id)
			INSERT INTO transaction_events (`+eventColumns+`)
			SELECT $3, merchant_id, id, $4, $5, $6, $7, $8 FROM taken, relaxed`,
			merchantID, id, uuid.Must(uuid.NewV7()).String(), string(step.Kind), step.Source, string(step.Status),
			payment.EventDetail(step.Detail), s.db.Time(step.At), operatorRef)
		return err
	}
	// SQLite: with the others waiting for the writer (s.pushes).
	_, err := s.pushes.Do(ctx, pushTaken{merchantID, id, operatorRef, step})
	return err
}

// pushTaken is what PushTaken writes.
type pushTaken struct {
	merchantID, id, operatorRef string
	step                        payment.TransactionEvent
}

// markTaken clears p's flag inside tx, and writes its step if it did.
func (s *Transactions) markTaken(ctx context.Context, tx *sql.Tx, p pushTaken) error {
	res, err := tx.ExecContext(ctx, `UPDATE transactions SET push_in_flight = FALSE, operator_ref = COALESCE(NULLIF($3, ''), operator_ref)
		WHERE merchant_id = $1 AND id = $2 AND push_in_flight`, p.merchantID, p.id, p.operatorRef)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	return s.addSteps(ctx, tx, p.merchantID, p.id, p.step)
}

// Heard implements payment.Store.
func (s *Transactions) Heard(ctx context.Context, merchantID, id string, e payment.TransactionEvent) error {
	if !validIDs(merchantID, id) {
		return payment.ErrNotFound
	}
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		return s.addEvent(ctx, tx, merchantID, id, e)
	})
}

// eventColumns are a timeline step's columns.
const eventColumns = `id, merchant_id, transaction_id, kind, source, status, detail, at`

// addEvent writes one step of a transaction's timeline inside tx, if the
// transaction exists. The id is a version 7 UUID, which orders steps
// written in the same microsecond.
func (s *Transactions) addEvent(ctx context.Context, tx *sql.Tx, merchantID, id string, e payment.TransactionEvent) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO transaction_events (`+eventColumns+`)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM transactions WHERE merchant_id = $2 AND id = $3)`,
		uuid.Must(uuid.NewV7()).String(), merchantID, id, string(e.Kind), e.Source, string(e.Status),
		payment.EventDetail(e.Detail), s.db.Time(e.At))
	return err
}

// addSteps writes steps of a transaction that tx has just inserted or
// updated, in order and in one statement: a settlement's two steps cost
// one round trip. Unlike addEvent it does not look for the transaction.
func (s *Transactions) addSteps(ctx context.Context, tx *sql.Tx, merchantID, id string, steps ...payment.TransactionEvent) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO transaction_events (` + eventColumns + `) VALUES `)
	args := []any{merchantID, id}
	for i, e := range steps {
		if i > 0 {
			q.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&q, "($%d, $1, $2, $%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6)
		args = append(args, uuid.Must(uuid.NewV7()).String(), string(e.Kind), e.Source, string(e.Status),
			payment.EventDetail(e.Detail), s.db.Time(e.At))
	}
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// Timeline returns the steps of one of the merchant's transactions, oldest
// first; ErrNotFound when the merchant has no such transaction.
func (s *Transactions) Timeline(ctx context.Context, merchantID, id string) ([]payment.TransactionEvent, error) {
	if !payment.ValidID(id) || !payment.ValidID(merchantID) {
		return nil, payment.ErrNotFound
	}
	out := []payment.TransactionEvent{}
	err := s.db.InSnapshot(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM transactions WHERE merchant_id = $1 AND id = $2`, merchantID, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return payment.ErrNotFound
		}
		rows, err := tx.QueryContext(ctx, `SELECT kind, source, status, detail, at FROM transaction_events
			WHERE merchant_id = $1 AND transaction_id = $2 ORDER BY at, id LIMIT 500`, merchantID, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e payment.TransactionEvent
			var at Timestamp
			if err := rows.Scan(&e.Kind, &e.Source, &e.Status, &e.Detail, &at); err != nil {
				return err
			}
			e.At = at.Time
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
