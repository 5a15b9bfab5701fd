package jobs_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// polls records the payment polls the workers run.
type polls chan string

func (p polls) Poll(_ context.Context, _, id string) (time.Duration, error) {
	p <- id
	return 0, nil
}

func (polls) Expire(context.Context, string, string) (time.Duration, error) { return 0, nil }

// TestJobStartsOnNotify: on PostgreSQL a job due at once starts when the
// transaction that inserted it commits, told by LISTEN/NOTIFY, not at the
// next poll: with the queues polling once an hour, the worker still runs
// it. Before the workers ran on River's pgx driver, nothing listened and
// the job waited for the poll.
func TestJobStartsOnNotify(t *testing.T) {
	ctx := t.Context()
	db, err := store.Open(ctx, testdb.URL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := jobs.Migrate(ctx, db.DB, false); err != nil {
		t.Fatal(err)
	}
	pool, err := db.OpenPool(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(polls, 1)
	c, err := jobs.NewClient(db.DB, &jobs.Postgres{Pool: pool, ConnOf: db.ConnOf}, &jobs.Handlers{Payments: ran},
		jobs.Config{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.WithoutCancel(ctx))
	// River fetches once as it starts; let that pass, so that only a
	// notification can start the job.
	time.Sleep(500 * time.Millisecond)
	id := uuid.NewString()
	if err := db.InTx(ctx, func(tx *sql.Tx) error {
		return jobs.ScheduleLifecycle(ctx, c, tx, uuid.NewString(), id, time.Now(), time.Now().Add(time.Hour))
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ran:
		if got != id {
			t.Errorf("polled payment %s, want %s", got, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not start within 30 s with hourly polls: its insert's NOTIFY did not reach the workers")
	}
}
