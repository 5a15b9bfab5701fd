// Package jobs is momopay's durable background work on payments: status
// polls, expiry checks, late checks after TIMEOUT and auto-refunds, kept
// as River jobs in the same database as the payments, so a job is
// inserted in the same transaction as its payment and survives any
// process crash. (Webhook attempts are scheduled by their
// deliveries' own rows: see webhook.Dispatcher.)
//
// It holds no business rules: each worker calls one method of the domain and
// turns its answer into River's vocabulary (done, snooze, retry).
package jobs

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// Inserter inserts jobs inside the caller's database transaction.
// Client implements it (and so does River's own *river.Client[*sql.Tx]).
type Inserter interface {
	InsertManyTx(ctx context.Context, tx *sql.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// PollPayment asks the operator where a PENDING transaction stands.
type PollPayment struct {
	MerchantID    string `json:"merchant_id"`
	TransactionID string `json:"transaction_id"`
}

// Kind implements river.JobArgs.
func (PollPayment) Kind() string { return "payment_poll" }

// ExpirePayment ends a transaction that is still PENDING at expires_at.
type ExpirePayment struct {
	MerchantID    string `json:"merchant_id"`
	TransactionID string `json:"transaction_id"`
}

// Kind implements river.JobArgs.
func (ExpirePayment) Kind() string { return "payment_expire" }

// LateCheck asks the operator once more about a payment that ended
// TIMEOUT (payment.Service.LateCheck).
type LateCheck struct {
	MerchantID    string `json:"merchant_id"`
	TransactionID string `json:"transaction_id"`
}

// Kind implements river.JobArgs.
func (LateCheck) Kind() string { return "payment_late_check" }

// AutoRefund refunds a late SUCCESS after TIMEOUT when the merchant's
// policy says so (payment.Service.AutoRefund). It is inserted with the
// reconciliation case the late SUCCESS opens, so the refund is neither
// lost to a crash after that commit nor made while an operator's
// callback waits for its answer.
type AutoRefund struct {
	MerchantID    string `json:"merchant_id"`
	TransactionID string `json:"transaction_id"`
}

// Kind implements river.JobArgs.
func (AutoRefund) Kind() string { return "payment_auto_refund" }

// Payments is what the payment workers need from payment.Service. Each
// returns how long to wait before the next run, or 0 when the job is done.
type Payments interface {
	Poll(ctx context.Context, merchantID, id string) (time.Duration, error)
	Expire(ctx context.Context, merchantID, id string) (time.Duration, error)
	LateCheck(ctx context.Context, merchantID, id string) (time.Duration, error)
	AutoRefund(ctx context.Context, merchantID, id string) (time.Duration, error)
}

// Handlers are the domain services the workers call. They are filled in
// after the River client exists, because the services themselves need the
// client to insert jobs.
type Handlers struct {
	Payments Payments
}

// QueuePayments is the queue of payment polls and expiry checks. (Webhook
// attempts are not River jobs: webhook.Dispatcher runs them from their own
// table.)
const QueuePayments = "payments"

// legacyWebhookKind is the kind of the River jobs that made webhook
// attempts before webhook.Dispatcher did. Migrate deletes any left in an
// upgraded database: the deliveries they stood for are pending in their
// own table, where the dispatcher finds them.
const legacyWebhookKind = "webhook_deliver"

// Config tunes the job client.
type Config struct {
	// PollInterval bounds how often an idle queue looks for due jobs when
	// nothing told it to; each queue polls at most as often as its own
	// default (paymentFetchInterval) asks.
	PollInterval time.Duration
	Logger       *slog.Logger
}

// How long a job may run, and when River takes back one left running by a
// process that died. Every worker is idempotent (payment.Service.Poll and
// Expire settle with one conditional UPDATE), so running a job a second
// time is harmless and these can be short: a killed process's jobs then
// come back in seconds, not the minutes River's defaults would take.
const (
	// operatorEnquiryTimeout bounds one status enquiry to an operator, as
	// webhook.DefaultTimeout bounds a receiver: 10 s is already far beyond
	// what Airtel and Moov answer in.
	operatorEnquiryTimeout = 10 * time.Second
	// paymentJobTimeout is one enquiry plus the few short queries around
	// it (read the transaction, settle it, insert its webhook deliveries).
	paymentJobTimeout = operatorEnquiryTimeout + 5*time.Second
	// rescueAfter is a little more than the longest legitimate run: a job
	// still "running" after it belongs to a process that is gone. River's
	// rescuer only looks every 30 s (not configurable) and only on the
	// leader, which itself takes up to ~20 s to replace when it is the one
	// that died; the Sweeper covers what must not wait that long.
	rescueAfter = paymentJobTimeout + 5*time.Second
)

// paymentWorkers is how many polls and expiry checks one process runs at
// once. Each mostly waits: on the operator's answer and on a few database
// round trips, so many workers cost little, while few throttle the whole
// queue: River fetches at most this many jobs per fetch, and at 10 workers
// 35 payments created per second (each with a dozen polls and an expiry
// check) already queued up hundreds of due jobs. With 200, 100 creates/s
// stay on time on a 2-core machine ("go run ./bench -only sustain"
// measures it; there the CPU, not the workers, runs out first, at about
// 150/s).
const paymentWorkers = 200

// paymentFetchInterval is how often the payments queue looks for due jobs
// when nothing told it to. A snoozed poll or expiry check (and one the
// scheduler has just made available) starts at most this late; it is what
// keeps a TIMEOUT within a fraction of a second of expires_at.
const paymentFetchInterval = 100 * time.Millisecond

// driverFor returns River's driver for the engine behind db.
func driverFor(db *sql.DB, sqlite bool) riverdriver.Driver[*sql.Tx] {
	if sqlite {
		return riversqlite.New(db)
	}
	return riverdatabasesql.New(db)
}

// Migrate creates or updates River's own tables.
func Migrate(ctx context.Context, db *sql.DB, sqlite bool) error {
	m, err := rivermigrate.New(driverFor(db, sqlite), nil)
	if err != nil {
		return err
	}
	if _, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, `DELETE FROM river_job WHERE kind = $1`, legacyWebhookKind)
	return err
}

// snoozeOrDone turns a worker's answer into River's.
func snoozeOrDone(next time.Duration, err error) error {
	if err != nil {
		return err
	}
	if next > 0 {
		return river.JobSnooze(next)
	}
	return nil
}

// paymentJob is the arguments of a payment job: which payment it is about.
type paymentJob interface {
	river.JobArgs
	payment() (merchantID, id string)
}

func (a PollPayment) payment() (string, string)   { return a.MerchantID, a.TransactionID }
func (a ExpirePayment) payment() (string, string) { return a.MerchantID, a.TransactionID }
func (a LateCheck) payment() (string, string)     { return a.MerchantID, a.TransactionID }
func (a AutoRefund) payment() (string, string)    { return a.MerchantID, a.TransactionID }

// paymentWorker runs one kind of payment job through step, the
// payment.Service call it stands for (Payments.Poll, Expire, LateCheck),
// bounded by paymentJobTimeout and snoozed for as long as the step says.
// The step is taken from h when the job runs: h.Payments is filled in
// after the client exists.
type paymentWorker[T paymentJob] struct {
	river.WorkerDefaults[T]
	h    *Handlers
	step func(p Payments, ctx context.Context, merchantID, id string) (time.Duration, error)
}

// Timeout implements river.Worker.
func (w *paymentWorker[T]) Timeout(*river.Job[T]) time.Duration { return paymentJobTimeout }

func (w *paymentWorker[T]) Work(ctx context.Context, j *river.Job[T]) error {
	merchantID, id := j.Args.payment()
	return snoozeOrDone(w.step(w.h.Payments, ctx, merchantID, id))
}

// ScheduleLateCheck inserts, inside tx (the one settling a payment
// TIMEOUT), the payment's late check for at: it commits or rolls back with
// the TIMEOUT.
func ScheduleLateCheck(ctx context.Context, ins Inserter, tx *sql.Tx, merchantID, id string, at time.Time) error {
	_, err := ins.InsertManyTx(ctx, tx, []river.InsertManyParams{
		{Args: LateCheck{MerchantID: merchantID, TransactionID: id}, InsertOpts: &river.InsertOpts{Queue: QueuePayments, ScheduledAt: at, Priority: lateCheckPriority}},
	})
	return err
}

// ScheduleAutoRefund inserts, inside tx (the one recording a late SUCCESS
// after TIMEOUT), the payment's auto-refund, due at once: it commits or
// rolls back with the reconciliation case.
func ScheduleAutoRefund(ctx context.Context, ins Inserter, tx *sql.Tx, merchantID, id string) error {
	_, err := ins.InsertManyTx(ctx, tx, []river.InsertManyParams{
		{Args: AutoRefund{MerchantID: merchantID, TransactionID: id}, InsertOpts: &river.InsertOpts{Queue: QueuePayments, Priority: lateCheckPriority}},
	})
	return err
}

// ScheduleLifecycle inserts, inside tx, the first status poll and the
// expiry check of a new transaction, each for its own time. Both start at
// that time (within paymentFetchInterval): the first poll because
// promptStart inserts it available, the expiry check because River's
// scheduler looks one pass ahead and makes a job due within the next 5 s
// available with its scheduled_at kept. So the expiry check needs no early
// schedule and snooze (which cost every payment one more job run). Neither
// job runs at once: the payer needs a few seconds, and a job running when
// its process is killed waits for the rescue.
func ScheduleLifecycle(ctx context.Context, ins Inserter, tx *sql.Tx, merchantID, id string, firstPoll, expiresAt time.Time) error {
	// One call inserts both: River writes them in one statement, where two
	// InsertTx calls cost a create two round trips and River's per-call
	// work twice.
	_, err := ins.InsertManyTx(ctx, tx, []river.InsertManyParams{
		{Args: PollPayment{MerchantID: merchantID, TransactionID: id}, InsertOpts: &river.InsertOpts{Queue: QueuePayments, ScheduledAt: firstPoll, Priority: pollPriority}},
		{Args: ExpirePayment{MerchantID: merchantID, TransactionID: id}, InsertOpts: &river.InsertOpts{Queue: QueuePayments, ScheduledAt: expiresAt, Priority: expiryPriority}},
	})
	return err
}

// River fetches due jobs by priority first (1 is the highest), then by
// time. A payment has one expiry check and about a dozen polls; when the
// machine falls behind, the due polls queue up, and an expiry check of
// the same priority would wait behind all of them, leaving its payment
// PENDING past expires_at. Ahead of them, it is late by the time its own
// run takes. The polls keep their priority when they snooze.
const (
	expiryPriority = 1
	pollPriority   = 2
	// A late check only looks for a reconciliation case, and an
	// auto-refund gives back money already late: both wait behind the
	// payments still in play.
	lateCheckPriority = 3
)

// sqlitePaymentWorkers caps the payments queue on SQLite. Writes there
// go through one connection, but a poll mostly waits on the operator and
// reads through the store's reader connections, so workers are cheap; too
// few leave due polls and expiry checks queued. At 200 creates/s for a
// minute ("go run ./bench -only sustain -dbs sqlite"), 20 workers let
// TIMEOUTs land up to 57 s late (p99) and 4,270 payments still PENDING past
// their expiry; 60 workers, 4.8 s; 120, 151 ms with every payment settled.
const sqlitePaymentWorkers = 120

func paymentWorkersFor(sqlite bool) int {
	if sqlite {
		return sqlitePaymentWorkers
	}
	return paymentWorkers
}
