package jobs_test

import (
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/testdb"
)

// TestJobsCommitWithTheirTransaction: the jobs of a change are inserted
// inside its transaction on either engine (on PostgreSQL through River's
// pgx driver on the transaction's own connection): a rolled-back change
// leaves no job, a committed one leaves its jobs, and the insert does not
// end the transaction it joined.
func TestJobsCommitWithTheirTransaction(t *testing.T) {
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			a, err := app.Open(ctx, app.Config{DatabaseURL: testdb.URL(t, engine), Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			merchant, now := uuid.NewString(), time.Now()
			schedule := func(id string, then error) error {
				return a.DB.InTx(ctx, func(tx *sql.Tx) error {
					if err := jobs.ScheduleLifecycle(ctx, a.Jobs, tx, merchant, id, now.Add(time.Hour), now.Add(2*time.Hour)); err != nil {
						return err
					}
					// A second insert in the same transaction.
					if err := jobs.ScheduleLifecycle(ctx, a.Jobs, tx, merchant, id, now.Add(time.Minute), now.Add(time.Hour)); err != nil {
						return err
					}
					// The transaction is still open and usable after the inserts.
					var n int
					if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job`).Scan(&n); err != nil {
						return err
					}
					return then
				})
			}
			jobsOf := func(id string) int {
				var n int
				if err := a.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE args->>'transaction_id' = $1`, id).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			rolledBack, committed := uuid.NewString(), uuid.NewString()
			if err := schedule(rolledBack, errors.New("the change failed")); err == nil {
				t.Fatal("the failing change was committed")
			}
			if err := schedule(committed, nil); err != nil {
				t.Fatal(err)
			}
			if n := jobsOf(rolledBack); n != 0 {
				t.Errorf("a rolled-back change left %d jobs", n)
			}
			if n := jobsOf(committed); n != 4 {
				t.Errorf("a committed change left %d jobs, want 4 (two polls, two expiry checks)", n)
			}
		})
	}
}

// TestExpiryChecksGoFirst: a payment's expiry check is inserted ahead of
// its polls in River's fetch order (priority, then time), so that when due
// polls queue up on a saturated machine the expiry checks do not wait
// behind them ("go run ./bench -only sustain" showed TIMEOUTs 2.2–2.5 s
// late at p99 with equal priorities, 0.3–0.6 s with these).
func TestExpiryChecksGoFirst(t *testing.T) {
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			a, err := app.Open(ctx, app.Config{DatabaseURL: testdb.URL(t, engine), Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			id, now := uuid.NewString(), time.Now()
			if err := a.DB.InTx(ctx, func(tx *sql.Tx) error {
				return jobs.ScheduleLifecycle(ctx, a.Jobs, tx, uuid.NewString(), id, now.Add(time.Hour), now.Add(2*time.Hour))
			}); err != nil {
				t.Fatal(err)
			}
			priority := map[string]int{}
			rows, err := a.DB.QueryContext(ctx, `SELECT kind, priority FROM river_job WHERE args->>'transaction_id' = $1`, id)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var kind string
				var p int
				if err := rows.Scan(&kind, &p); err != nil {
					t.Fatal(err)
				}
				priority[kind] = p
			}
			if len(priority) != 2 || priority["payment_expire"] == 0 || priority["payment_expire"] >= priority["payment_poll"] {
				t.Fatalf("priorities %v: want the expiry check's ahead of (lower than) the poll's", priority)
			}
		})
	}
}
