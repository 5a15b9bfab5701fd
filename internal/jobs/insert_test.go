package jobs_test

import (
	"database/sql"
	"errors"
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
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		a := openApp(t, engine, app.Config{})
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
