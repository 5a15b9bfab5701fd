// Package jobs is momopay's durable background work: status polls, expiry
// checks and webhook attempts, kept as River jobs in the same database as
// the rows that cause them, so a job is inserted in the same transaction as
// its cause and survives any process crash.
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

// DeliverWebhook makes the next attempt of one webhook delivery.
type DeliverWebhook struct {
	MerchantID string `json:"merchant_id"`
	DeliveryID string `json:"delivery_id"`
}

// Kind implements river.JobArgs.
func (DeliverWebhook) Kind() string { return "webhook_deliver" }

// Payments is what the payment workers need from payment.Service. Each
// returns how long to wait before the next run, or 0 when the job is done.
type Payments interface {
	Poll(ctx context.Context, merchantID, id string) (time.Duration, error)
	Expire(ctx context.Context, merchantID, id string) (time.Duration, error)
}

// Deliveries is what the webhook worker needs from the webhook package.
type Deliveries interface {
	Attempt(ctx context.Context, merchantID, deliveryID string) (time.Duration, error)
}

// Handlers are the domain services the workers call. They are filled in
// after the River client exists, because the services themselves need the
// client to insert jobs.
type Handlers struct {
	Payments   Payments
	Deliveries Deliveries
}

// Queue names. Webhook attempts have their own queue so that slow merchant
// endpoints never delay payment polls and expiries.
const (
	QueuePayments = "payments"
	QueueWebhooks = "webhooks"
)

// Config tunes the job client.
type Config struct {
	// PollInterval bounds how often an idle queue looks for due jobs when
	// nothing told it to; each queue polls at most as often as its own
	// default (paymentFetchInterval, webhookFetchInterval) asks.
	PollInterval time.Duration
	// WebhookPollInterval, when set, replaces webhookFetchInterval: tests
	// use a long one to show that, on PostgreSQL, a webhook job starts on
	// its notification alone.
	WebhookPollInterval time.Duration
	// WebhookWorkers bounds concurrent webhook attempts per process.
	WebhookWorkers int
	Logger         *slog.Logger
}

// How long a job may run, and when River takes back one left running by a
// process that died. Every worker is idempotent (payment.Service.Poll and
// Expire settle with one conditional UPDATE; webhook.Service.Attempt claims
// its attempt with a conditional update and a lease), so running a job a
// second time is harmless and these can be short: a killed process's jobs
// then come back in seconds, not the minutes River's defaults would take.
const (
	// operatorEnquiryTimeout bounds one status enquiry to an operator, as
	// webhook.DefaultTimeout bounds a receiver: 10 s is already far beyond
	// what Airtel and Moov answer in.
	operatorEnquiryTimeout = 10 * time.Second
	// paymentJobTimeout is one enquiry plus the few short queries around
	// it (read the transaction, settle it, insert its webhook deliveries).
	paymentJobTimeout = operatorEnquiryTimeout + 5*time.Second
	// webhookJobTimeout is one attempt, bounded by the receiver's 10 s
	// (webhook.DefaultTimeout), plus its claim and the write of its
	// outcome. It matches webhook.Service's claim lease, so a job cut
	// off here has already let go of its delivery.
	webhookJobTimeout = 10*time.Second + 5*time.Second
	// rescueAfter is a little more than the longest legitimate run: a job
	// still "running" after it belongs to a process that is gone. River's
	// rescuer only looks every 30 s (not configurable) and only on the
	// leader, which itself takes up to ~20 s to replace when it is the one
	// that died; the Sweeper covers what must not wait that long.
	rescueAfter = max(paymentJobTimeout, webhookJobTimeout) + 5*time.Second
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
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
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

type pollWorker struct {
	river.WorkerDefaults[PollPayment]
	h *Handlers
}

// Timeout implements river.Worker.
func (w *pollWorker) Timeout(*river.Job[PollPayment]) time.Duration { return paymentJobTimeout }

func (w *pollWorker) Work(ctx context.Context, j *river.Job[PollPayment]) error {
	return snoozeOrDone(w.h.Payments.Poll(ctx, j.Args.MerchantID, j.Args.TransactionID))
}

type expireWorker struct {
	river.WorkerDefaults[ExpirePayment]
	h *Handlers
}

// Timeout implements river.Worker.
func (w *expireWorker) Timeout(*river.Job[ExpirePayment]) time.Duration { return paymentJobTimeout }

func (w *expireWorker) Work(ctx context.Context, j *river.Job[ExpirePayment]) error {
	return snoozeOrDone(w.h.Payments.Expire(ctx, j.Args.MerchantID, j.Args.TransactionID))
}

type deliverWorker struct {
	river.WorkerDefaults[DeliverWebhook]
	h *Handlers
}

// Timeout implements river.Worker.
func (w *deliverWorker) Timeout(*river.Job[DeliverWebhook]) time.Duration { return webhookJobTimeout }

func (w *deliverWorker) Work(ctx context.Context, j *river.Job[DeliverWebhook]) error {
	return snoozeOrDone(w.h.Deliveries.Attempt(ctx, j.Args.MerchantID, j.Args.DeliveryID))
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
		{Args: PollPayment{MerchantID: merchantID, TransactionID: id}, InsertOpts: &river.InsertOpts{Queue: QueuePayments, ScheduledAt: firstPoll}},
		{Args: ExpirePayment{MerchantID: merchantID, TransactionID: id}, InsertOpts: &river.InsertOpts{Queue: QueuePayments, ScheduledAt: expiresAt}},
	})
	return err
}

// ScheduleDeliveries inserts, inside tx, the first attempt of each of a
// merchant's deliveries, available at once, in one call. It does nothing
// for no deliveries.
func ScheduleDeliveries(ctx context.Context, ins Inserter, tx *sql.Tx, merchantID string, deliveryIDs []string) error {
	if len(deliveryIDs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(deliveryIDs))
	for i, id := range deliveryIDs {
		params[i] = river.InsertManyParams{Args: DeliverWebhook{MerchantID: merchantID, DeliveryID: id}, InsertOpts: &river.InsertOpts{Queue: QueueWebhooks}}
	}
	_, err := ins.InsertManyTx(ctx, tx, params)
	return err
}

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
