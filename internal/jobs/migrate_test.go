package jobs_test

import (
	"testing"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// TestMigrateDropsLegacyWebhookJobs: a database upgraded from a version
// whose webhook attempts were River jobs keeps no such job (no worker
// would take it; the dispatcher works the deliveries from their own
// table), and the payment jobs beside them are kept.
func TestMigrateDropsLegacyWebhookJobs(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		db := openMigrated(t, engine)
		sqlite := db.Dialect == store.SQLite
		for _, kind := range []string{"webhook_deliver", "webhook_deliver", "payment_poll"} {
			if _, err := db.ExecContext(ctx, `INSERT INTO river_job (kind, args, queue, state, max_attempts, priority)
				VALUES ($1, '{}', 'webhooks', 'available', 25, 1)`, kind); err != nil {
				t.Fatal(err)
			}
		}
		if err := jobs.Migrate(ctx, db.DB, sqlite); err != nil {
			t.Fatal(err)
		}
		var webhooks, others int
		if err := db.QueryRowContext(ctx, `SELECT
				COALESCE(SUM(CASE WHEN kind = 'webhook_deliver' THEN 1 ELSE 0 END), 0),
				COALESCE(SUM(CASE WHEN kind <> 'webhook_deliver' THEN 1 ELSE 0 END), 0) FROM river_job`).Scan(&webhooks, &others); err != nil {
			t.Fatal(err)
		}
		if webhooks != 0 || others != 1 {
			t.Fatalf("after the migration: %d webhook jobs and %d others; want 0 and 1", webhooks, others)
		}
	})
}
