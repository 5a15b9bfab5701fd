package jobs_test

import (
	"testing"
	"time"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// TestStatsReadsEveryTimeRiverWrites: River passes some times (a snoozed
// poll's scheduled_at, every finished job's finalized_at) to SQLite as
// time.Time parameters, which the driver writes as time.Time.String(),
// monotonic reading included ("… +0000 UTC m=+457.03"). The metrics could
// not read them: each scrape that met one reported the database down and
// left out the job gauges (47 of 221 scrapes in a 30-minute soak).
func TestStatsReadsEveryTimeRiverWrites(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		db := openMigrated(t, engine)
		sqlite := db.Dialect == store.SQLite
		due := time.Now().Add(-3 * time.Second) // a wall and a monotonic reading, as River's time.Now() has
		if _, err := db.ExecContext(ctx, `INSERT INTO river_job (kind, args, queue, state, max_attempts, priority, scheduled_at)
			VALUES ('payment_poll', '{}', $1, 'available', 25, 2, $2)`, jobs.QueuePayments, due); err != nil {
			t.Fatal(err)
		}
		stats, err := jobs.Stats(ctx, db.DB, sqlite, due.Add(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stats {
			if q.Queue == jobs.QueuePayments && (q.OldestDue < 4*time.Second || q.OldestDue > 6*time.Second) {
				t.Errorf("oldest due job waited %v, want 5s", q.OldestDue)
			}
		}
	})
}

// openMigrated opens a fresh database of engine with River's tables,
// closed at the end of the test.
func openMigrated(t *testing.T, engine string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), testdb.URL(t, engine))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := jobs.Migrate(t.Context(), db.DB, db.Dialect == store.SQLite); err != nil {
		t.Fatal(err)
	}
	return db
}
