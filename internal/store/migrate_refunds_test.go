package store

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/testdb"
)

// TestMigrationRefundsNotSent migrates a database holding refunds from
// version 14 through 00015 (which rebuilds the refunds table on SQLite),
// down and up again: every refund is kept with its status, NOT_SENT is
// allowed and, like REFUSED, does not count as the payment's one refund;
// going down, a NOT_SENT refund reads as REFUSED.
func TestMigrationRefundsNotSent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		db := openAt(t, engine, 14)
		now := db.Time(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC))
		merchant, paid, refunded := uuid.NewString(), uuid.NewString(), uuid.NewString()
		exec(t, db, `INSERT INTO merchants (id, name, email, password_hash, created_at) VALUES ($1, 'Shop', 'm@example.td', '-', $2)`, merchant, now)
		for _, tx := range []string{paid, refunded} {
			exec(t, db, `INSERT INTO transactions (id, merchant_id, reference, internal_ref, amount, currency, operator,
				phone_number, status, created_at, updated_at, expires_at)
				VALUES ($1, $2, $3, $4, 1500, 'XAF', 'AIRTEL', '+23560000001', 'SUCCESS', $5, $5, $5)`, tx, merchant, "r"+tx[:8], "MP-"+tx[:8], now)
		}
		refund := func(tx, status string) error {
			_, err := db.ExecContext(ctx, `INSERT INTO refunds (id, merchant_id, transaction_id, amount, requested_by, status,
				operator_code, operator_detail, operator_ref, requested_at, answered_at)
				VALUES ($1, $2, $3, 1500, 'ops', $4, '', '', '', $5, $5)`, uuid.NewString(), merchant, tx, status, now)
			return err
		}
		for _, r := range [][2]string{{paid, "REFUSED"}, {paid, "UNKNOWN"}, {refunded, "REFUNDED"}} {
			if err := refund(r[0], r[1]); err != nil {
				t.Fatal(err)
			}
		}
		statuses := func() map[string]int {
			rows, err := db.QueryContext(ctx, `SELECT status, COUNT(*) FROM refunds GROUP BY status`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			got := map[string]int{}
			for rows.Next() {
				var s string
				var n int
				if err := rows.Scan(&s, &n); err != nil {
					t.Fatal(err)
				}
				got[s] = n
			}
			return got
		}

		migrateTo(t, db, 15)
		if got := statuses(); got["REFUSED"] != 1 || got["UNKNOWN"] != 1 || got["REFUNDED"] != 1 || len(got) != 3 {
			t.Fatalf("refunds after 00015: %v", got)
		}
		// NOT_SENT is a status now, and does not take the payment's one
		// refund: a refunded payment may have one, and one more REQUESTED
		// refund is still refused.
		if err := refund(refunded, "NOT_SENT"); err != nil {
			t.Errorf("a NOT_SENT refund of a refunded payment: %v", err)
		}
		if err := refund(refunded, "REQUESTED"); !IsUniqueViolation(err, "refunds") {
			t.Errorf("a second refund under way: %v, want a unique violation", err)
		}
		if err := refund(paid, "SENT"); err == nil {
			t.Error("a status the CHECK does not know was stored")
		}

		if _, err := provider(t, db).DownTo(ctx, 14); err != nil {
			t.Fatalf("down to 14: %v", err)
		}
		if got := statuses(); got["REFUSED"] != 2 || got["UNKNOWN"] != 1 || got["REFUNDED"] != 1 || len(got) != 3 {
			t.Fatalf("refunds after going down: %v", got)
		}
		if err := refund(refunded, "NOT_SENT"); err == nil {
			t.Error("NOT_SENT stored at version 14")
		}
		migrateTo(t, db, 15)
		if got := statuses(); len(got) != 3 || got["REFUSED"] != 2 {
			t.Fatalf("refunds after going up again: %v", got)
		}
	})
}
