package webhook

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// What an interrupted attempt's history says. An attempt is written before
// its POST leaves, so one whose outcome never came is still in the history,
// and it counts as a failed attempt (one of the five): it may well have
// reached the receiver, which dedupes on the delivery id.
const (
	interruptedByCrash    = "no answer recorded: the process stopped during the attempt"
	interruptedByShutdown = "no answer recorded: the service shut down during the attempt"
)

// Stages of an attempt row (webhook_attempts.stage).
const (
	stageSending     = "sending"
	stageDone        = "done"
	stageInterrupted = "interrupted"
)

// target is a delivery with what an attempt needs from its endpoint.
type target struct {
	merchantID, id, endpointID string
	event, payload             string
	state                      DeliveryState
	test                       bool
	// attempts counts every attempt made, automatic and manual, the one in
	// flight included: it equals the number of the delivery's attempt rows.
	attempts int
	// automatic counts the automatic attempts, interrupted ones included:
	// the position in the contract's schedule, which manual attempts do
	// not move.
	automatic                 int
	nextAttemptAt, leaseUntil time.Time
	url, secret               string
	// previous is the endpoint's secret before its last rotation while it
	// is still valid (until previousUntil); deliveries carry a
	// webhook-signature for it too.
	previous         string
	previousUntil    time.Time
	enabled, deleted bool
	// resendRequested: a bulk re-send put this undelivered delivery back
	// to pending for one manual attempt (ResendUndelivered).
	resendRequested bool
}

// claimed is an attempt written as "sending" by claim.
type claimed struct {
	id     string
	number int
	manual bool
	at     time.Time
}

// targetColumns are what loadTarget reads of a delivery (d) and its
// endpoint (e), in scanTarget's order.
const targetColumns = `d.merchant_id, d.id, d.endpoint_id, d.event, d.payload, d.state, d.test, d.attempts,
	(SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id AND a.manual = FALSE),
	d.next_attempt_at, d.lease_until, d.resend_requested_at, e.url, e.secret, e.previous_secret,
	e.previous_secret_expires_at, e.enabled, e.deleted_at`

// targetJoin joins a delivery d to its endpoint e.
const targetJoin = `JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.merchant_id = d.merchant_id`

func (s *Service) loadTarget(ctx context.Context, merchantID, deliveryID string) (*target, error) {
	if !isUUID(merchantID, deliveryID) {
		return nil, ErrDeliveryNotFound
	}
	if s.batches.load != nil {
		d, err := s.batches.load.Do(ctx, targetKey{merchantID, deliveryID})
		if err == nil && d == nil {
			return nil, ErrDeliveryNotFound
		}
		return d, err
	}
	d, err := scanTarget(s.db.Reader().QueryRowContext(ctx, `SELECT `+targetColumns+`
		FROM webhook_deliveries d `+targetJoin+`
		WHERE d.merchant_id = $1 AND d.id = $2`, merchantID, deliveryID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrDeliveryNotFound
	}
	return d, err
}

// scanTarget reads one row of targetColumns, after the columns that lead
// fills (a batch's input number).
func scanTarget(row interface{ Scan(...any) error }, lead ...any) (*target, error) {
	d := &target{}
	var next, lease, deleted, previousUntil, resend store.Timestamp
	var previous sql.NullString
	err := row.Scan(append(lead, &d.merchantID, &d.id, &d.endpointID, &d.event, &d.payload, &d.state, &d.test, &d.attempts, &d.automatic,
		&next, &lease, &resend, &d.url, &d.secret, &previous, &previousUntil, &d.enabled, &deleted)...)
	if err != nil {
		return nil, err
	}
	d.nextAttemptAt, d.leaseUntil, d.deleted = next.Time, lease.Time, !deleted.IsZero()
	d.previous, d.previousUntil, d.resendRequested = previous.String, previousUntil.Time, !resend.IsZero()
	return d, nil
}

// message is the POST of one attempt of d.
func (d *target) message(at time.Time) message {
	m := message{url: d.url, secret: d.secret, deliveryID: d.id, event: d.event, body: []byte(d.payload), at: at}
	if d.previous != "" && at.Before(d.previousUntil) {
		m.previous = d.previous
	}
	return m
}

// Attempt makes the next automatic attempt of a pending delivery and
// returns the time until the one after it, or 0 when there is none to
// make. The Dispatcher runs the same logic (attempt) on each due delivery
// it has read; Attempt is the form for one delivery named by its ids. On
// a 2xx the delivery is delivered; on a failure it returns the wait before
// the next attempt from the contract's table (1 min, 5 min, 30 min, 2 h),
// and after the fifth failed automatic attempt marks the delivery
// undelivered and returns 0.
//
// It is safe to run twice or concurrently for one delivery (two instances'
// dispatchers, or a run after a crash): a delivery that is no longer pending
// is left alone, an attempt that is not yet due, or another attempt still
// in flight, returns the time left, and the attempt itself is claimed with
// a conditional update so only one caller sends. A delivery whose endpoint
// was disabled or deleted is marked undelivered without sending, so the
// merchant can still re-send it.
//
// An attempt is recorded before it is sent. When the process dies during
// it, the run that takes over after the lease records it as interrupted
// and, since it counts as a failed attempt, makes the next one at once
// rather than after the schedule's delay: the delay gives a failing
// receiver time, and this one was not seen to fail. An interrupted fifth
// attempt makes the delivery undelivered.
func (s *Service) Attempt(ctx context.Context, merchantID, deliveryID string) (time.Duration, error) {
	d, err := s.loadTarget(ctx, merchantID, deliveryID)
	if errors.Is(err, ErrDeliveryNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return s.attempt(ctx, d)
}

// attempt is Attempt for a delivery already read (the dispatcher reads
// the due ones together).
func (s *Service) attempt(ctx context.Context, d *target) (time.Duration, error) {
	merchantID, deliveryID := d.merchantID, d.id
	if d.state != StatePending {
		return 0, nil
	}
	now := s.stamp()
	if wait := d.leaseUntil.Sub(now); wait > 0 {
		// An attempt is in flight (another run, a manual one, or one whose
		// process died): look again when its lease is over.
		return wait, nil
	}
	switch {
	case !d.enabled || d.deleted:
		s.log.Info("webhook endpoint disabled; delivery left undelivered", "merchant_id", merchantID, "delivery_id", deliveryID)
		return 0, s.giveUp(ctx, d, now)
	case d.resendRequested:
		return 0, s.requestedResend(ctx, d, now)
	case d.automatic >= MaxAttempts:
		s.log.Warn("last webhook attempt was interrupted; delivery undelivered", "merchant_id", merchantID, "delivery_id", deliveryID)
		return 0, s.giveUp(ctx, d, now)
	}
	if wait := d.nextAttemptAt.Sub(now); wait > 0 {
		return wait, nil
	}
	c, err := s.claim(ctx, d, now, false)
	if err != nil {
		return 0, err
	}
	if c == nil {
		// Another run took this attempt; look again once its lease or
		// its own schedule is over.
		if d, err = s.loadTarget(ctx, merchantID, deliveryID); err != nil || d.state != StatePending {
			return 0, err
		}
		return max(d.nextAttemptAt.Sub(now), d.leaseUntil.Sub(now), time.Second), nil
	}

	a := s.send(ctx, d.message(c.at))
	if ctx.Err() != nil && !a.Succeeded {
		// Shutdown interrupted us, not the receiver. The attempt may have
		// arrived, so it stays in the history and counts; the lease is
		// given back and the attempt's due time restored, so the next run
		// (this instance once restarted, or another one) goes on at once:
		// an orderly stop is not the receiver's failure.
		s.interrupt(d, c, interruptedByShutdown)
		return 0, ctx.Err()
	}
	end := s.stamp()
	state, next, wait := StatePending, time.Time{}, time.Duration(0)
	switch auto := d.automatic + 1; {
	case a.Succeeded:
		state = StateDelivered
	case auto >= MaxAttempts:
		state = StateUndelivered
	default:
		wait = retryDelays[auto-1]
		next = end.Add(wait)
	}
	if err := s.finish(context.WithoutCancel(ctx), d, c, &a, state, next, end); err != nil {
		return 0, err
	}
	s.logAttempt(d, &a, state)
	return wait, nil
}

// The reasons Resend refuses a delivery for, carried as the Reason of its
// payment.Error so that the dashboard can word each in the user's language.
var (
	ErrResendTest      = errors.New("a test event is sent once")
	ErrResendDelivered = errors.New("the delivery was delivered already")
	ErrResendDeleted   = errors.New("the delivery's endpoint was deleted")
	ErrResendBusy      = errors.New("the delivery is being attempted right now")
)

// Resend makes one immediate, synchronous, manual attempt of a pending or
// undelivered delivery, with the same delivery id and body bytes, recorded
// in its history (manual). A 2xx makes it delivered, and its scheduled
// attempts then find nothing to do. A failure leaves it as it was: an
// undelivered one can be re-sent again, and a pending one keeps its
// automatic schedule, neither moved nor shortened (manual attempts are not
// among the five). It refuses, with a payment.EUNPROCESSABLE error, a
// delivered delivery, a test event (send a new one), one whose endpoint
// was deleted, one with an attempt in flight, and any while
// ManualPerEndpoint sends asked by hand wait on its endpoint
// (ErrManualBusy). A receiver's refusal is
// not an error: the returned attempt says what happened.
func (s *Service) Resend(ctx context.Context, merchantID, deliveryID string) (*DeliveryAttempt, error) {
	d, err := s.loadTarget(ctx, merchantID, deliveryID)
	if err != nil {
		return nil, err
	}
	switch {
	case d.test:
		return nil, payment.Refuse(payment.EUNPROCESSABLE, ErrResendTest, "delivery %s is a test event, which is sent once: send a new test instead", d.id)
	case d.state == StateDelivered:
		return nil, payment.Refuse(payment.EUNPROCESSABLE, ErrResendDelivered, "delivery %s was delivered already: only a pending or undelivered delivery can be re-sent", d.id)
	case d.deleted:
		return nil, payment.Refuse(payment.EUNPROCESSABLE, ErrResendDeleted, "the endpoint of delivery %s was deleted", d.id)
	}
	leave, err := s.manual.enter(d.endpointID)
	if err != nil {
		return nil, err
	}
	defer leave()
	// The claim fails while another attempt holds the lease.
	c, err := s.claim(ctx, d, s.stamp(), true)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, payment.Refuse(payment.EUNPROCESSABLE, ErrResendBusy, "delivery %s is being attempted right now: look at its history in a few seconds", d.id)
	}
	a := s.send(ctx, d.message(c.at))
	if err := ctx.Err(); err != nil && !a.Succeeded {
		s.interrupt(d, c, interruptedByShutdown)
		return nil, err
	}
	state, next := d.state, time.Time{}
	switch {
	case a.Succeeded:
		state = StateDelivered
	case d.resendRequested:
		// Queued by a bulk re-send, which this attempt answers: it goes
		// back to undelivered rather than being sent again on the schedule.
		state = StateUndelivered
	case state == StatePending:
		next = d.nextAttemptAt
	}
	if err := s.finish(context.WithoutCancel(ctx), d, c, &a, state, next, s.stamp()); err != nil {
		return nil, err
	}
	s.logAttempt(d, &a, state)
	return &a, nil
}

// requestedResend makes the one manual attempt a bulk re-send asked for
// (ResendUndelivered): delivered on a 2xx, undelivered again otherwise,
// never retried on the automatic schedule, whose five attempts were spent.
func (s *Service) requestedResend(ctx context.Context, d *target, now time.Time) error {
	c, err := s.claim(ctx, d, now, true)
	if err != nil || c == nil {
		// Another run took it (it ends the request either way).
		return err
	}
	a := s.send(ctx, d.message(c.at))
	if ctx.Err() != nil && !a.Succeeded {
		s.interrupt(d, c, interruptedByShutdown)
		return ctx.Err()
	}
	state := StateUndelivered
	if a.Succeeded {
		state = StateDelivered
	}
	if err := s.finish(context.WithoutCancel(ctx), d, c, &a, state, time.Time{}, s.stamp()); err != nil {
		return err
	}
	s.logAttempt(d, &a, state)
	return nil
}

// claim takes the right to make the next attempt, and records it, in one
// short transaction: on the condition that nobody changed the delivery
// since it was read and no other attempt holds a lease, it counts the
// attempt and leases the delivery for it, closes an attempt a dead process
// left "sending" as interrupted, and writes the new attempt as "sending".
// An automatic attempt must also be due; a manual one need not be. It
// returns nil when the condition failed. No transaction stays open while
// the receiver answers. Concurrent claims share a statement or a
// transaction (attempt_batch.go); one that takes over a lease is rare and
// runs alone.
func (s *Service) claim(ctx context.Context, d *target, now time.Time, manual bool) (*claimed, error) {
	c := &claimed{id: uuid.NewString(), number: d.attempts + 1, manual: manual, at: now}
	in := claimInput{d: d, c: c, lease: now.Add(s.lease())}
	if auto := d.automatic + 1; !manual && auto < MaxAttempts && !d.leaseUntil.IsZero() {
		// This attempt takes over one whose process died during it,
		// which it makes again as soon as the lease allows (a crash is not
		// the receiver's failure). Should its process die too, the next
		// waits the schedule's delay from this one's start, as after a
		// failure: a process that crashes again and again does not spend
		// the five attempts in seconds. (A shutdown puts the due time
		// back: see interrupt.)
		in.retryAt = now.Add(retryDelays[auto-1])
	}
	var ok bool
	var err error
	if d.leaseUntil.IsZero() {
		ok, err = s.batches.claim.Do(ctx, in)
	} else {
		err = s.db.InTx(ctx, func(tx *sql.Tx) error {
			ok, err = s.claimTx(ctx, tx, in)
			return err
		})
	}
	if !ok || err != nil {
		return nil, err
	}
	return c, nil
}

// claimTx is one claim's writes inside tx; false when its condition failed.
func (s *Service) claimTx(ctx context.Context, tx *sql.Tx, x claimInput) (bool, error) {
	d, c := x.d, x.c
	due := ""
	if !c.manual {
		due = ` AND (next_attempt_at IS NULL OR next_attempt_at <= $7)`
	}
	res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET attempts = $1, lease_until = $2,
			next_attempt_at = COALESCE($8, next_attempt_at)
		WHERE merchant_id = $3 AND id = $4 AND state = $5 AND attempts = $6
		AND (lease_until IS NULL OR lease_until <= $7)`+due,
		c.number, s.db.Time(x.lease), d.merchantID, d.id, string(d.state), d.attempts, s.db.Time(c.at), s.db.NullTime(x.retryAt))
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, err
	}
	// A lease is cleared whenever an attempt ends (finish, interrupt,
	// giveUp), so one still set means an attempt left "sending".
	if !d.leaseUntil.IsZero() {
		if err := closeInterrupted(ctx, tx, d); err != nil {
			return false, err
		}
	}
	return true, s.insertAttempt(ctx, tx, d, c)
}

// insertAttempt writes claimed attempt c of d to the history as "sending",
// before its POST leaves.
func (s *Service) insertAttempt(ctx context.Context, tx *sql.Tx, d *target, c *claimed) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts
		(id, merchant_id, delivery_id, number, manual, attempted_at, status_code, error, latency_ms, response_excerpt, stage)
		VALUES ($1, $2, $3, $4, $5, $6, NULL, '', 0, '', $7)`,
		c.id, d.merchantID, d.id, c.number, c.manual, s.db.Time(c.at), stageSending)
	return err
}

// closeInterrupted marks the attempt a dead process left "sending" as
// interrupted. Callers hold the delivery (a claim, or the lease is over),
// so no live attempt is closed.
func closeInterrupted(ctx context.Context, tx *sql.Tx, d *target) error {
	_, err := tx.ExecContext(ctx, `UPDATE webhook_attempts SET stage = $1, error = $2
		WHERE merchant_id = $3 AND delivery_id = $4 AND stage = $5`,
		stageInterrupted, interruptedByCrash, d.merchantID, d.id, stageSending)
	return err
}

// finish records the outcome of claimed attempt c and the delivery's new
// state in one short transaction, and ends the lease. Concurrent finishes
// share a statement or a transaction (attempt_batch.go).
func (s *Service) finish(ctx context.Context, d *target, c *claimed, a *DeliveryAttempt, state DeliveryState, next, now time.Time) error {
	a.Number, a.Manual, a.AttemptedAt = c.number, c.manual, c.at
	_, err := s.batches.finish.Do(ctx, finishInput{d: d, c: c, a: a, state: state, next: next, now: now})
	return err
}

// finishTx is one finish's writes inside tx.
func (s *Service) finishTx(ctx context.Context, tx *sql.Tx, x finishInput) error {
	d, c, a := x.d, x.c, x.a
	var code any
	if a.StatusCode != 0 {
		code = a.StatusCode
	}
	// The row is ours whatever happened meanwhile: the true outcome
	// always replaces "sending" (or an "interrupted" written by a run
	// that wrongly took over after our lease).
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_attempts SET stage = $1, status_code = $2, error = $3,
			latency_ms = $4, response_excerpt = $5 WHERE merchant_id = $6 AND id = $7`,
		stageDone, code, a.Error, a.LatencyMS, a.ResponseExcerpt, d.merchantID, c.id); err != nil {
		return err
	}
	// Conditional on what the claim wrote, so a writer that somehow
	// outlived its lease cannot overwrite a newer outcome.
	_, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = $1, next_attempt_at = $2, lease_until = NULL,
			resend_requested_at = NULL, updated_at = $3
		WHERE merchant_id = $4 AND id = $5 AND state = $6 AND attempts = $7`,
		string(x.state), s.db.NullTime(x.next), s.db.Time(x.now), d.merchantID, d.id, string(d.state), c.number)
	return err
}

// interrupt records claimed attempt c as interrupted when the service stops
// during it, ends the lease and puts back the due time the claim moved
// (claimInput.retryAt), so the next run need not wait for either.
// Failing here only leaves the attempt "sending" until the lease is over,
// when the next claim closes it, so the error is logged, not returned.
func (s *Service) interrupt(d *target, c *claimed, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_attempts SET stage = $1, error = $2
			WHERE merchant_id = $3 AND id = $4 AND stage = $5`,
			stageInterrupted, reason, d.merchantID, c.id, stageSending); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_until = NULL, next_attempt_at = $5
			WHERE merchant_id = $1 AND id = $2 AND state = $3 AND attempts = $4`,
			d.merchantID, d.id, string(d.state), c.number, s.db.NullTime(d.nextAttemptAt))
		return err
	})
	if err != nil {
		s.log.Warn("could not record the interrupted webhook attempt; the next run records it after the lease",
			"delivery_id", d.id, "err", err)
	}
}

// giveUp makes a pending delivery undelivered without sending (its endpoint
// is disabled or deleted, or its fifth attempt was interrupted), closing an
// interrupted attempt on the way.
func (s *Service) giveUp(ctx context.Context, d *target, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = $1, next_attempt_at = NULL, lease_until = NULL,
				resend_requested_at = NULL, updated_at = $2
			WHERE merchant_id = $3 AND id = $4 AND state = $5 AND attempts = $6 AND (lease_until IS NULL OR lease_until <= $2)`,
			string(StateUndelivered), s.db.Time(now), d.merchantID, d.id, string(StatePending), d.attempts)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		return closeInterrupted(ctx, tx, d)
	})
}

// logAttempt notes the outcome for operators: ids and numbers only, never
// the secret nor the body. A failure is the receiver's (its answer, its
// time-out, its address), which the merchant sees in the delivery's
// history, so it is INFO, as a refused API request is: a broken receiver
// fails every event it is sent, five times each, and at WARN would bury
// the lines an operator must act on. The failures of this service's own
// (the database) are logged by the dispatcher, at most once a second.
func (s *Service) logAttempt(d *target, a *DeliveryAttempt, state DeliveryState) {
	args := []any{"merchant_id", d.merchantID, "delivery_id", d.id, "event", d.event, "attempt", a.Number,
		"manual", a.Manual, "status_code", a.StatusCode, "latency_ms", a.LatencyMS, "state", state}
	if a.Succeeded {
		s.log.Info("webhook delivered", args...)
		return
	}
	if a.Error != "" {
		args = append(args, "error", a.Error)
	}
	s.log.Info("webhook attempt failed", args...)
}
