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

func (polls) LateCheck(context.Context, string, string) (time.Duration, error) { return 0, nil }

func (polls) AutoRefund(context.Context, string, string) (time.Duration, error) { return 0, nil }

// startClient starts a PostgreSQL job client on db that reports its polls
// to ran, with the client's own poll interval at an hour: only the payments
// queue's own fetch interval (or a notification) can start a job.
func startClient(t *testing.T, db *store.DB, ran polls) *jobs.Client {
	t.Helper()
	ctx := t.Context()
	if err := jobs.Migrate(ctx, db.DB, false); err != nil {
		t.Fatal(err)
	}
	pool, err := db.OpenPool(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	c, err := jobs.NewClient(db.DB, &jobs.Postgres{Pool: pool, ConnOf: db.ConnOf}, &jobs.Handlers{Payments: ran},
		jobs.Config{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.WithoutCancel(ctx)) })
	return c
}

func openPostgres(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), testdb.URL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestDueJobStartsPromptly: on PostgreSQL a job due at once starts within
// the payments queue's fetch interval of its commit, however long the
// client's own poll interval (an hour here).
func TestDueJobStartsPromptly(t *testing.T) {
	ctx := t.Context()
	db := openPostgres(t)
	ran := make(polls, 1)
	c := startClient(t, db, ran)
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
		t.Fatal("the job did not start within 30 s with hourly client polls")
	}
}

// TestCreatesDoNotEachNotify: the transactions that insert payments' jobs
// do not each send River's insert NOTIFY (at most one per client poll
// interval goes out). A NOTIFY takes PostgreSQL's global notification lock
// through its transaction's commit, so one per create made concurrent
// creates commit one at a time; the jobs are due seconds later and the
// queue's own polling finds them (TestDueJobStartsPromptly).
func TestCreatesDoNotEachNotify(t *testing.T) {
	ctx := t.Context()
	db := openPostgres(t)
	c := startClient(t, db, make(polls, 100))
	pool, err := db.OpenPool(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after Listen's connection is given back
	// River's insert topic, in the schema its tables are in.
	heard := testdb.Listen(t, pool, `"public.river_insert"`)
	const creates = 20
	for range creates {
		if err := db.InTx(ctx, func(tx *sql.Tx) error {
			return jobs.ScheduleLifecycle(ctx, c, tx, uuid.NewString(), uuid.NewString(),
				time.Now().Add(3*time.Second), time.Now().Add(time.Hour))
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // beyond River's least cooldown (1 ms)
	}
	if n := heard(time.Second); n > 1 {
		t.Errorf("%d creates sent %d insert notifications, want at most 1", creates, n)
	}
}
