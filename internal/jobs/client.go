package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// Client inserts momopay's jobs inside the store's transactions and works
// them.
//
// On SQLite one River client does both. On PostgreSQL the work is done by
// a client on River's pgx driver (its pool also carries River's own
// LISTEN connection, for leadership and queue control). The payments
// queue finds due jobs by polling every paymentFetchInterval, not by
// River's insert notifications: see insertNotifyCooldown.
//
// The inserts must join the store's *sql.Tx: a payment and its jobs, a
// state change and its deliveries, commit together or not at all. On
// PostgreSQL they go through the same pgx client, on the transaction's own
// connection (Postgres.ConnOf and database/sql's Conn.Raw): River's
// database/sql driver passes its arrays through driver.Valuer and text
// encoding, which was half of a create's CPU in the profile. A transaction
// whose connection is unknown falls back to that driver.
type Client struct {
	// Client inserts where the pgx path cannot, and answers JobList; on
	// SQLite it also works the queues.
	*river.Client[*sql.Tx]
	worker worker
	pgx    *river.Client[pgx.Tx]
	connOf func(*sql.Tx) *sql.Conn
	pool   *pgxpool.Pool
}

// Postgres is what the client needs on PostgreSQL beyond the *sql.DB.
type Postgres struct {
	// Pool is the workers' own pgx pool (store.DB.OpenPool); the client
	// closes it.
	Pool *pgxpool.Pool
	// ConnOf returns the connection a store transaction runs on, or nil
	// (store.DB.ConnOf).
	ConnOf func(*sql.Tx) *sql.Conn
}

// InsertManyTx inserts jobs inside tx. On PostgreSQL, for a transaction
// whose connection is known, it goes through River's pgx driver on that
// very connection (database/sql's Conn.Raw), so the jobs still commit or
// roll back with tx.
func (c *Client) InsertManyTx(ctx context.Context, tx *sql.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	var conn *sql.Conn
	if c.connOf != nil {
		conn = c.connOf(tx)
	}
	if conn == nil {
		return c.Client.InsertManyTx(ctx, tx, params)
	}
	var res []*rivertype.JobInsertResult
	err := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("jobs: a PostgreSQL connection of type %T, not pgx's", dc)
		}
		var err error
		res, err = c.pgx.InsertManyTx(ctx, openTx{sc.Conn()}, params)
		return err
	})
	return res, err
}

// worker is the part of a River client that runs the queues.
type worker interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	Stopped() <-chan struct{}
}

// Start starts working the queues.
func (c *Client) Start(ctx context.Context) error { return c.worker.Start(ctx) }

// Stop lets running jobs finish, then stops.
func (c *Client) Stop(ctx context.Context) error { return c.worker.Stop(ctx) }

// StopAndCancel cancels running jobs (River retries them) and stops.
func (c *Client) StopAndCancel(ctx context.Context) error { return c.worker.StopAndCancel(ctx) }

// Stopped is closed once the workers have stopped.
func (c *Client) Stopped() <-chan struct{} { return c.worker.Stopped() }

// Close releases the workers' own connections (PostgreSQL); the caller's
// *sql.DB is left open.
func (c *Client) Close() {
	if c.pool != nil {
		c.pool.Close()
	}
}

// WorkerPoolSize bounds the pgx pool of the PostgreSQL workers: the
// listener holds one connection, each queue's fetches and River's batched
// completions and maintenance share the rest. The workers' own queries go
// through the store's database/sql pool, not this one.
const WorkerPoolSize = 8

// insertNotifyCooldown is the least time between two insert notifications
// of one queue from one process (River's limiter takes the inserting
// client's FetchCooldown), given the client's poll interval: at most one a
// poll, River's most, since its FetchCooldown may not exceed its
// FetchPollInterval. The queues set their own cooldown and poll.
//
// A NOTIFY costs every transaction that sends one PostgreSQL's global
// notification lock, held through its commit's WAL flush, so notifying
// transactions commit one at a time and none shares a flush: with one per
// create (River's least cooldown, 1 ms, as before), pg_stat_activity
// sampled during the create benchmark showed more sessions waiting on
// that lock or on WALWrite at commit than running. And it brings nothing:
// the jobs a payment inserts are due seconds later (its first poll
// payment.FirstPollDelay after creation, its expiry check at expires_at),
// and the payments queue looks for due jobs every paymentFetchInterval.
func insertNotifyCooldown(poll time.Duration) time.Duration { return poll }

// NewClient builds the job client on db: pg is required on PostgreSQL and
// nil on SQLite.
func NewClient(db *sql.DB, pg *Postgres, h *Handlers, cfg Config) (*Client, error) {
	sqlite := pg == nil
	workCfg := workConfig(sqlite, h, cfg)
	if sqlite {
		c, err := river.NewClient(driverFor(db, true), workCfg)
		if err != nil {
			return nil, err
		}
		return &Client{Client: c, worker: c}, nil
	}
	ins, err := river.NewClient(driverFor(db, false), &river.Config{
		Middleware:        workCfg.Middleware,
		MaxAttempts:       workCfg.MaxAttempts,
		FetchCooldown:     workCfg.FetchCooldown,
		FetchPollInterval: workCfg.FetchPollInterval,
		Logger:            cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	w, err := river.NewClient[pgx.Tx](riverpgxv5.New(pg.Pool), workCfg)
	if err != nil {
		return nil, err
	}
	return &Client{Client: ins, worker: w, pgx: w, connOf: pg.ConnOf, pool: pg.Pool}, nil
}

// workConfig is the configuration of the client that works the queues.
func workConfig(sqlite bool, h *Handlers, cfg Config) *river.Config {
	workers := river.NewWorkers()
	river.AddWorker(workers, &paymentWorker[PollPayment]{h: h, step: Payments.Poll})
	river.AddWorker(workers, &paymentWorker[ExpirePayment]{h: h, step: Payments.Expire})
	river.AddWorker(workers, &paymentWorker[LateCheck]{h: h, step: Payments.LateCheck})
	river.AddWorker(workers, &paymentWorker[AutoRefund]{h: h, step: Payments.AutoRefund})
	poll := cfg.PollInterval
	if poll <= 0 {
		poll = river.FetchPollIntervalDefault
	}
	cooldown := min(poll, river.FetchCooldownDefault)
	paymentPoll := min(poll, paymentFetchInterval)
	return &river.Config{
		Queues: map[string]river.QueueConfig{
			QueuePayments: {
				MaxWorkers:        paymentWorkersFor(sqlite),
				FetchCooldown:     min(cooldown, paymentPoll),
				FetchPollInterval: paymentPoll,
			},
		},
		Workers:    workers,
		Middleware: []rivertype.Middleware{&promptStart{}},
		// Each queue has its own fetch cooldown; the client's is what
		// limits insert notifications (the inserts go through this
		// client on PostgreSQL too, see InsertManyTx).
		FetchCooldown:     insertNotifyCooldown(poll),
		FetchPollInterval: poll,
		// Failures here are infrastructure trouble (database down): keep
		// retrying with River's backoff rather than drop a payment.
		MaxAttempts:          100,
		JobTimeout:           paymentJobTimeout,
		RescueStuckJobsAfter: rescueAfter,
		Logger:               cfg.Logger,
	}
}
