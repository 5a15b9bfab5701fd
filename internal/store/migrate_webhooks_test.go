package store

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"

	"github.com/momopay/momopay/internal/testdb"
)

// TestMigrationWebhookHistoryKeepsRows migrates a database holding webhook
// deliveries and attempts from version 3 to the newest and checks that
// migration 00004 (which rebuilds webhook_deliveries on SQLite) kept every
// row and every reference, that old attempts read as finished, and that the
// new rules hold: a test delivery has no transaction and a delivery of a
// transaction always has one, and a merchant's live endpoints have distinct
// URL keys.
func TestMigrationWebhookHistoryKeepsRows(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		db := openAt(t, engine, 3)

		now := db.Time(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC))
		merchant, endpoint, tx, delivery := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
		exec(t, db, `INSERT INTO merchants (id, name, email, password_hash, created_at) VALUES ($1, 'Shop', 'm@example.td', '-', $2)`, merchant, now)
		exec(t, db, `INSERT INTO webhook_endpoints (id, merchant_id, url, secret, enabled, created_at)
			VALUES ($1, $2, 'https://shop.example.td/hook', 'whsec_x', TRUE, $3)`, endpoint, merchant, now)
		// Two live endpoints with one URL, as registered before 00004:
		// the unique index must not refuse the migration.
		exec(t, db, `INSERT INTO webhook_endpoints (id, merchant_id, url, secret, enabled, created_at)
			VALUES ($1, $2, 'https://shop.example.td/hook', 'whsec_y', TRUE, $3)`, uuid.NewString(), merchant, now)
		exec(t, db, `INSERT INTO transactions (id, merchant_id, reference, internal_ref, amount, currency, operator,
			phone_number, status, created_at, updated_at, expires_at)
			VALUES ($1, $2, 'r1', 'MP-1', 1500, 'XAF', 'AIRTEL', '+23560000001', 'SUCCESS', $3, $3, $3)`, tx, merchant, now)
		exec(t, db, `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event, transaction_id, payload, state,
			attempts, next_attempt_at, created_at, updated_at)
			VALUES ($1, $2, $3, 'transaction.success', $4, '{}', 'pending', 2, $5, $5, $5)`, delivery, merchant, endpoint, tx, now)
		for n := 1; n <= 2; n++ {
			exec(t, db, `INSERT INTO webhook_attempts (id, merchant_id, delivery_id, number, manual, attempted_at, status_code,
				error, latency_ms, response_excerpt) VALUES ($1, $2, $3, $4, FALSE, $5, 500, '', 3, 'no')`,
				uuid.NewString(), merchant, delivery, n, now)
		}

		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate to the newest version: %v", err)
		}

		var state, stages string
		var attempts, count int
		var test bool
		var txID sql.NullString
		if err := db.QueryRowContext(ctx, `SELECT d.state, d.attempts, d.test, d.transaction_id,
				(SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id),
				(SELECT min(stage) || '/' || max(stage) FROM webhook_attempts a WHERE a.delivery_id = d.id)
			FROM webhook_deliveries d WHERE d.id = $1`, delivery).Scan(&state, &attempts, &test, &txID, &count, &stages); err != nil {
			t.Fatalf("read the delivery back: %v", err)
		}
		if state != "pending" || attempts != 2 || test || txID.String != tx || count != 2 || stages != "done/done" {
			t.Fatalf("after migration: state %s, attempts %d, test %v, transaction %q, %d attempt rows (%s); want pending, 2, false, %s, 2 (done/done)",
				state, attempts, test, txID.String, count, stages, tx)
		}
		if db.Dialect == SQLite {
			var orphans int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&orphans); err != nil || orphans != 0 {
				t.Fatalf("foreign key check: %d violations, %v", orphans, err)
			}
		}

		testRow := `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event, transaction_id, test, payload, state,
			attempts, created_at, updated_at) VALUES ($1, $2, $3, 'transaction.test', $4, $5, '{}', 'delivered', 1, $6, $6)`
		exec(t, db, testRow, uuid.NewString(), merchant, endpoint, nil, true, now)
		exec(t, db, testRow, uuid.NewString(), merchant, endpoint, nil, true, now) // tests repeat
		for _, bad := range []struct {
			tx   any
			test bool
		}{{nil, false}, {tx, true}} {
			if _, err := db.ExecContext(ctx, testRow, uuid.NewString(), merchant, endpoint, bad.tx, bad.test, now); err == nil {
				t.Errorf("a delivery with transaction %v and test=%v was accepted", bad.tx, bad.test)
			}
		}

		keyRow := `INSERT INTO webhook_endpoints (id, merchant_id, url, secret, enabled, created_at, url_key, deleted_at)
			VALUES ($1, $2, 'https://a.example.td/', 'whsec_z', TRUE, $3, 'https://a.example.td/', $4)`
		exec(t, db, keyRow, uuid.NewString(), merchant, now, now) // deleted ones do not count
		exec(t, db, keyRow, uuid.NewString(), merchant, now, nil)
		_, err := db.ExecContext(ctx, keyRow, uuid.NewString(), merchant, now, nil)
		if !IsUniqueViolation(err, "url_key") {
			t.Fatalf("a second live endpoint with one URL key: %v; want a unique violation naming url_key", err)
		}

		// Down and up again: the transaction's delivery and its attempts stay.
		if _, err := provider(t, db).DownTo(ctx, 3); err != nil {
			t.Fatalf("migrate down to version 3: %v", err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up after down: %v", err)
		}
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
			WHERE d.transaction_id = $1`, tx).Scan(&count); err != nil || count != 2 {
			t.Fatalf("after down and up: %d attempts, %v; want 2", count, err)
		}
	})
}

// openAt opens a fresh database of engine migrated to version alone, for
// a migration test to fill as an older build left it.
func openAt(t *testing.T, engine string, version int64) *DB {
	t.Helper()
	db, err := Open(t.Context(), testdb.URL(t, engine))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	migrateTo(t, db, version)
	return db
}

func migrateTo(t *testing.T, db *DB, version int64) {
	t.Helper()
	if _, err := provider(t, db).UpTo(context.Background(), version); err != nil {
		t.Fatalf("migrate to version %d: %v", version, err)
	}
}

func provider(t *testing.T, db *DB) *goose.Provider {
	t.Helper()
	p, err := db.migrationProvider()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func exec(t *testing.T, db *DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
