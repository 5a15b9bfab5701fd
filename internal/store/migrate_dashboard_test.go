package store

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/momopay/momopay/internal/testdb"
)

// TestMigrationDashboard migrates a database with merchants and
// transactions from version 5: each merchant's login becomes its owner
// (same password), and the daily totals start from the transactions
// already there, by N'Djamena day.
func TestMigrationDashboard(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		db := openAt(t, engine, 5)

		hash, _ := bcrypt.GenerateFromPassword([]byte("the old login"), bcrypt.MinCost)
		merchant := uuid.NewString()
		exec(t, db, `INSERT INTO merchants (id, name, email, password_hash, created_at) VALUES ($1, 'Shop', 'old@example.td', $2, $3)`,
			merchant, string(hash), db.Time(time.Now()))
		insert := func(at time.Time, amount int64, op, status string) {
			exec(t, db, `INSERT INTO transactions (id, merchant_id, reference, internal_ref, amount, currency, operator,
				phone_number, status, created_at, updated_at, expires_at)
				VALUES ($1, $2, $3, $4, $5, 'XAF', $6, '+23560000001', $7, $8, $8, $8)`,
				uuid.NewString(), merchant, uuid.NewString(), uuid.NewString(), amount, op, status, db.Time(at))
		}
		insert(time.Date(2026, 3, 10, 22, 59, 0, 0, time.UTC), 1000, "AIRTEL", "SUCCESS") // 23:59 on the 10th
		insert(time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC), 2000, "AIRTEL", "SUCCESS")  // 00:00 on the 11th
		insert(time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC), 3000, "AIRTEL", "SUCCESS")
		insert(time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC), 500, "MOOV", "FAILED")

		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		u, err := NewUsers(db).CheckPassword(ctx, "old@example.td", "the old login", false)
		if err != nil || u == nil || u.MerchantID != merchant || u.Role != "owner" {
			t.Fatalf("the old login as the owner: %+v %v", u, err)
		}
		totals, err := NewFigures(db).DailyTotals(ctx, merchant, "2026-03-10", "2026-03-11")
		if err != nil {
			t.Fatal(err)
		}
		want := []DailyTotal{
			{"2026-03-10", "SUCCESS", "AIRTEL", 1, 1000},
			{"2026-03-11", "FAILED", "MOOV", 1, 500},
			{"2026-03-11", "SUCCESS", "AIRTEL", 2, 5000},
		}
		if len(totals) != len(want) {
			t.Fatalf("totals %v, want %v", totals, want)
		}
		for i := range want {
			if totals[i] != want[i] {
				t.Errorf("total %d: %v, want %v", i, totals[i], want[i])
			}
		}
	})
}
