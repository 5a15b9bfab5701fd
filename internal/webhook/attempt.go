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

// target is a delivery with what an attempt needs from its endpoint.
type target struct {
	merchantID, id   string
	event, payload   string
	state            DeliveryState
	attempts         int
	nextAttemptAt    time.Time
	url, secret      string
	enabled, deleted bool
}

func (s *Service) loadTarget(ctx context.Context, merchantID, deliveryID string) (*target, error) {
	if !isUUID(merchantID, deliveryID) {
		return nil, ErrDeliveryNotFound
	}
	d := &target{merchantID: merchantID, id: deliveryID}
	var next, deleted store.Timestamp
	err := s.db.QueryRowContext(ctx, `SELECT d.event, d.payload, d.state, d.attempts, d.next_attempt_at,
			e.url, e.secret, e.enabled, e.deleted_at
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.merchant_id = d.merchant_id
		WHERE d.merchant_id = $1 AND d.id = $2`, merchantID, deliveryID).
		Scan(&d.event, &d.payload, &d.state, &d.attempts, &next, &d.url, &d.secret, &d.enabled, &deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrDeliveryNotFound
	}
	if err != nil {
		return nil, err
	}
	d.nextAttemptAt, d.deleted = next.Time, !deleted.IsZero()
	return d, nil
}

// Attempt makes the next automatic attempt of a pending delivery; the River
// worker calls it and snoozes the job for the returned delay, or ends it on
// 0. On a 2xx the delivery is delivered; on a failure it returns the wait
// before the next attempt from the contract's table (1 min, 5 min, 30 min,
// 2 h), and after the fifth failure marks the delivery undelivered and
// returns 0.
//
// It is safe to run twice or concurrently for one delivery (a River job run
// again after a crash, a rescued job): a delivery that is no longer pending
// is left alone, an attempt that is not yet due returns the time left, and
// the attempt itself is claimed with a conditional update so only one
// caller sends. A delivery whose endpoint was disabled or deleted is marked
// undelivered without sending, so the merchant can still re-send it.
func (s *Service) Attempt(ctx context.Context, merchantID, deliveryID string) (time.Duration, error) {
	d, err := s.loadTarget(ctx, merchantID, deliveryID)
	if errors.Is(err, ErrDeliveryNotFound) {
		s.log.Warn("webhook delivery not found; dropping its job", "merchant_id", merchantID, "delivery_id", deliveryID)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if d.state != StatePending {
		return 0, nil
	}
	now := s.stamp()
	if !d.enabled || d.deleted {
		s.log.Info("webhook endpoint disabled; delivery left undelivered", "merchant_id", merchantID, "delivery_id", deliveryID)
		return 0, s.finish(ctx, d, nil, StateUndelivered, time.Time{}, now)
	}
	if wait := d.nextAttemptAt.Sub(now); wait > 0 {
		return wait, nil
	}
	claimed, err := s.claim(ctx, d, now)
	if err != nil {
		return 0, err
	}
	if !claimed {
		// Another run took this attempt; look again once its lease or
		// its own schedule is over.
		if d, err = s.loadTarget(ctx, merchantID, deliveryID); err != nil || d.state != StatePending {
			return 0, err
		}
		return max(d.nextAttemptAt.Sub(now), time.Second), nil
	}

	a := s.send(ctx, message{url: d.url, secret: d.secret, deliveryID: d.id, event: d.event, body: []byte(d.payload)})
	if ctx.Err() != nil && !a.Succeeded {
		// Shutdown interrupted us, not the receiver: do not spend one of
		// the five attempts; give the attempt back and let River retry.
		s.release(d)
		return 0, ctx.Err()
	}
	a.Number = d.attempts + 1
	end := s.stamp()
	state, next, wait := StatePending, time.Time{}, time.Duration(0)
	switch {
	case a.Succeeded:
		state = StateDelivered
	case a.Number >= MaxAttempts:
		state = StateUndelivered
	default:
		wait = retryDelays[a.Number-1]
		next = end.Add(wait)
	}
	if err := s.finish(context.WithoutCancel(ctx), d, &a, state, next, end); err != nil {
		return 0, err
	}
	s.logAttempt(d, &a, state)
	return wait, nil
}

// Resend makes one immediate, synchronous, manual attempt of an undelivered
// delivery, with the same delivery id and body bytes, recorded in its
// history (manual). A 2xx makes it delivered; otherwise it stays
// undelivered and can be re-sent again. It refuses, with a
// payment.EUNPROCESSABLE error, a delivery that is not undelivered (pending
// ones are still on their schedule, delivered ones are done) or whose
// endpoint was deleted. A receiver's refusal is not an error: the returned
// attempt says what happened.
func (s *Service) Resend(ctx context.Context, merchantID, deliveryID string) (*DeliveryAttempt, error) {
	d, err := s.loadTarget(ctx, merchantID, deliveryID)
	if err != nil {
		return nil, err
	}
	if d.state != StateUndelivered {
		return nil, payment.Errorf(payment.EUNPROCESSABLE, "delivery %s is %s: only an undelivered delivery can be re-sent", d.id, d.state)
	}
	if d.deleted {
		return nil, payment.Errorf(payment.EUNPROCESSABLE, "the endpoint of delivery %s was deleted", d.id)
	}
	now := s.stamp()
	claimed, err := s.claim(ctx, d, now)
	if err != nil {
		return nil, err
	}
	if !claimed {
		return nil, payment.Errorf(payment.EUNPROCESSABLE, "delivery %s is being re-sent already", d.id)
	}
	a := s.send(ctx, message{url: d.url, secret: d.secret, deliveryID: d.id, event: d.event, body: []byte(d.payload)})
	if err := ctx.Err(); err != nil && !a.Succeeded {
		s.release(d)
		return nil, err
	}
	a.Number, a.Manual = d.attempts+1, true
	state := StateUndelivered
	if a.Succeeded {
		state = StateDelivered
	}
	if err := s.finish(context.WithoutCancel(ctx), d, &a, state, time.Time{}, s.stamp()); err != nil {
		return nil, err
	}
	s.logAttempt(d, &a, state)
	return &a, nil
}

// claim takes the right to make the next attempt by pushing next_attempt_at
// to the end of a lease, on the condition that nobody changed the delivery
// since it was read. It is one short statement: no transaction stays open
// while the receiver answers.
func (s *Service) claim(ctx context.Context, d *target, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = $1
		WHERE merchant_id = $2 AND id = $3 AND state = $4 AND attempts = $5
		AND (next_attempt_at IS NULL OR next_attempt_at <= $6)`,
		s.db.Time(now.Add(s.lease())), d.merchantID, d.id, string(d.state), d.attempts, s.db.Time(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// release gives back a claimed attempt that was interrupted by shutdown, so
// the next run does not wait for the lease. Failing to release only delays
// that run, so the error is logged, not returned.
func (s *Service) release(d *target) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = $1
		WHERE merchant_id = $2 AND id = $3 AND state = $4 AND attempts = $5`,
		s.db.NullTime(d.nextAttemptAt), d.merchantID, d.id, string(d.state), d.attempts); err != nil {
		s.log.Warn("could not release webhook attempt; it waits for its lease", "delivery_id", d.id, "err", err)
	}
}

// finish records attempt a (when there is one) and the delivery's new
// state in one short transaction.
func (s *Service) finish(ctx context.Context, d *target, a *DeliveryAttempt, state DeliveryState, next, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		attempts := d.attempts
		if a != nil {
			attempts = a.Number
			var code any
			if a.StatusCode != 0 {
				code = a.StatusCode
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts
				(id, merchant_id, delivery_id, number, manual, attempted_at, status_code, error, latency_ms, response_excerpt)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				uuid.NewString(), d.merchantID, d.id, a.Number, a.Manual, s.db.Time(a.AttemptedAt), code, a.Error,
				a.LatencyMS, a.ResponseExcerpt); err != nil {
				return err
			}
		}
		// Conditional on what the claim saw, so a writer that somehow
		// outlived its lease cannot overwrite a newer outcome.
		_, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = $1, attempts = $2, next_attempt_at = $3, updated_at = $4
			WHERE merchant_id = $5 AND id = $6 AND state = $7 AND attempts = $8`,
			string(state), attempts, s.db.NullTime(next), s.db.Time(now), d.merchantID, d.id, string(d.state), d.attempts)
		return err
	})
}

// logAttempt notes the outcome for operators: ids and numbers only, never
// the secret nor the body.
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
	s.log.Warn("webhook attempt failed", args...)
}
