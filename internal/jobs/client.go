package jobs

import (
	"context"
	"database/sql"
	"fmt"

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
// a client on River's pgx driver, which LISTENs on a connection of its own
// pool: River's insert sends a NOTIFY inside the inserting transaction, so
// a worker fetches a new job the moment that transaction commits. River's
// database/sql driver can only poll, and a webhook used to wait for the
// next poll (up to a second) before its first attempt; polling stays as
// the fallback.
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
// of one queue from one process: River's limiter takes the inserting
// client's FetchCooldown. A notification held back leaves its job to the
// next poll, so it is River's least: one NOTIFY per inserting
// transaction, which PostgreSQL delivers to each instance's listener and
// the queue's own fetch cooldown then batches.
const insertNotifyCooldown = river.FetchCooldownMin

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
		Middleware:    workCfg.Middleware,
		MaxAttempts:   workCfg.MaxAttempts,
		FetchCooldown: insertNotifyCooldown,
		Logger:        cfg.Logger,
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
	river.AddWorker(workers, &pollWorker{h: h})
	river.AddWorker(workers, &expireWorker{h: h})
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
		FetchCooldown:     insertNotifyCooldown,
		FetchPollInterval: poll,
		// Failures here are infrastructure trouble (database down): keep
		// retrying with River's backoff rather than drop a payment.
		MaxAttempts:          100,
		JobTimeout:           paymentJobTimeout,
		RescueStuckJobsAfter: rescueAfter,
		Logger:               cfg.Logger,
	}
}
