package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/store"
)

// DeliveryState is where a delivery stands (contract section 3, last rule).
type DeliveryState string

// A delivery is pending until a 2xx (delivered) or its fifth failed attempt
// (undelivered); a manual re-send can still turn undelivered into delivered.
const (
	StatePending     DeliveryState = "pending"
	StateDelivered   DeliveryState = "delivered"
	StateUndelivered DeliveryState = "undelivered"
)

// Delivery is one event for one endpoint. Its id is the X-Service-Delivery-Id
// and webhook-id of every attempt, automatic or manual, and Payload holds
// the exact bytes sent each time: receivers dedupe on the id and verify the
// signature over those bytes.
type Delivery struct {
	ID         string `json:"id"`
	EndpointID string `json:"endpoint_id"`
	URL        string `json:"url"`
	// EndpointDeleted: its endpoint was deleted, so it cannot be re-sent.
	EndpointDeleted bool   `json:"endpoint_deleted,omitempty"`
	Event           string `json:"event"`
	// TransactionID is empty (and left out of JSON) for a test event.
	TransactionID string `json:"transaction_id,omitempty"`
	// Test marks a transaction.test event sent on demand: it has one
	// attempt, is never retried and cannot be re-sent.
	Test bool `json:"test"`
	// ResendRequested: a bulk re-send queued this delivery for one manual
	// attempt that has not been made yet.
	ResendRequested bool            `json:"resend_requested,omitempty"`
	State           DeliveryState   `json:"state"`
	AttemptCount    int             `json:"attempt_count"`
	NextAttemptAt   *time.Time      `json:"next_attempt_at"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	Payload         json.RawMessage `json:"payload"`
	// Attempts is the history, oldest first (by Number).
	Attempts []DeliveryAttempt `json:"attempts"`

	leaseUntil time.Time
}

// DeliveryAttempt is the record of one POST: what a merchant needs to see
// why their endpoint did not take an event. StatusCode is 0 when no answer
// came (Error then says why: timeout, DNS, refused connection, forbidden
// address, or an interruption).
type DeliveryAttempt struct {
	Number          int       `json:"number"`
	Manual          bool      `json:"manual"`
	AttemptedAt     time.Time `json:"attempted_at"`
	StatusCode      int       `json:"status_code,omitempty"`
	Error           string    `json:"error,omitempty"`
	LatencyMS       int64     `json:"latency_ms"`
	ResponseExcerpt string    `json:"response_excerpt,omitempty"`
	// Succeeded reports a 2xx answer, the contract's only success.
	Succeeded bool `json:"succeeded"`
	// InProgress: the POST is under way and its outcome not yet known.
	InProgress bool `json:"in_progress,omitempty"`
	// Interrupted: the attempt was sent (or about to be) when the process
	// stopped, so no answer was recorded. It counts as a failed attempt.
	Interrupted bool `json:"interrupted,omitempty"`
}

// DefaultDeliveryLimit is how many deliveries a listing returns by default.
const DefaultDeliveryLimit = 50

const deliveryColumns = `d.id, d.endpoint_id, e.url, e.deleted_at IS NOT NULL, d.event, d.transaction_id, d.test, d.state, d.attempts,
	d.next_attempt_at, d.lease_until, d.resend_requested_at, d.created_at, d.updated_at, d.payload`

func scanDelivery(row interface{ Scan(...any) error }) (*Delivery, error) {
	var d Delivery
	var next, lease, resend, created, updated store.Timestamp
	var payload string
	var txID sql.NullString
	err := row.Scan(&d.ID, &d.EndpointID, &d.URL, &d.EndpointDeleted, &d.Event, &txID, &d.Test, &d.State, &d.AttemptCount,
		&next, &lease, &resend, &created, &updated, &payload)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrDeliveryNotFound
	}
	if err != nil {
		return nil, err
	}
	if !next.IsZero() {
		d.NextAttemptAt = &next.Time
	}
	d.TransactionID, d.leaseUntil, d.ResendRequested = txID.String, lease.Time, !resend.IsZero()
	d.CreatedAt, d.UpdatedAt, d.Payload = created.Time, updated.Time, json.RawMessage(payload)
	d.Attempts = []DeliveryAttempt{}
	return &d, nil
}

// addAttempt appends a to d's history. An attempt still "sending" is in
// progress while the delivery's lease lasts; after it, the process that
// made it has stopped, and it reads as interrupted before the next claim
// records it so.
func (d *Delivery) addAttempt(a DeliveryAttempt, stage string, now time.Time) {
	switch stage {
	case stageSending:
		if d.leaseUntil.After(now) {
			a.InProgress = true
		} else {
			a.Interrupted, a.Error = true, interruptedByCrash
		}
	case stageInterrupted:
		a.Interrupted = true
	}
	d.Attempts = append(d.Attempts, a)
}

// Deliveries returns the merchant's most recent deliveries, newest first,
// each with its attempts, as of one instant: a delivery's state and its
// attempts are read in one snapshot, so they always agree.
func (s *Service) Deliveries(ctx context.Context, merchantID string, limit int) ([]Delivery, error) {
	out := []Delivery{}
	if !isUUID(merchantID) {
		return out, nil
	}
	if limit <= 0 {
		limit = DefaultDeliveryLimit
	}
	return s.list(ctx, merchantID, `SELECT `+deliveryColumns+`
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.merchant_id = d.merchant_id
		WHERE d.merchant_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, merchantID, limit)
}

// Delivery returns one of the merchant's deliveries with its attempts, read
// in one snapshot.
func (s *Service) Delivery(ctx context.Context, merchantID, deliveryID string) (*Delivery, error) {
	if !isUUID(merchantID, deliveryID) {
		return nil, ErrDeliveryNotFound
	}
	var d *Delivery
	err := s.db.InSnapshot(ctx, func(tx *sql.Tx) error {
		var err error
		d, err = scanDelivery(tx.QueryRowContext(ctx, `SELECT `+deliveryColumns+`
			FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.merchant_id = d.merchant_id
			WHERE d.merchant_id = $1 AND d.id = $2`, merchantID, deliveryID))
		if err != nil {
			return err
		}
		now := s.stamp()
		return attempts(ctx, tx, merchantID, []string{deliveryID}, func(_ string, a DeliveryAttempt, stage string) {
			d.addAttempt(a, stage, now)
		})
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// attempts calls add for every attempt of the given deliveries, oldest
// first, with the attempt's stage. Oldest is by number, the order in which
// attempts were claimed: attempted_at comes from the clock of whichever
// process made the attempt (a server, a command line), and clocks differ.
func attempts(ctx context.Context, tx *sql.Tx, merchantID string, deliveryIDs []string, add func(string, DeliveryAttempt, string)) error {
	args := []any{merchantID}
	marks := make([]string, len(deliveryIDs))
	for i, id := range deliveryIDs {
		args = append(args, id)
		marks[i] = fmt.Sprintf("$%d", i+2)
	}
	rows, err := tx.QueryContext(ctx, `SELECT delivery_id, number, manual, attempted_at, status_code, error, latency_ms, response_excerpt, stage
		FROM webhook_attempts WHERE merchant_id = $1 AND delivery_id IN (`+strings.Join(marks, ", ")+`)
		ORDER BY number`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var deliveryID, stage string
		var a DeliveryAttempt
		var at store.Timestamp
		var code sql.NullInt64
		if err := rows.Scan(&deliveryID, &a.Number, &a.Manual, &at, &code, &a.Error, &a.LatencyMS, &a.ResponseExcerpt, &stage); err != nil {
			return err
		}
		a.AttemptedAt, a.StatusCode = at.Time, int(code.Int64)
		a.Succeeded = success(a.StatusCode)
		add(deliveryID, a, stage)
	}
	return rows.Err()
}

// success is the contract's definition: any 2xx.
func success(code int) bool { return code >= 200 && code <= 299 }

// UndeliveredOf counts one merchant's undelivered deliveries that a person
// can still act on, for the dashboard's overview: not test events (never
// re-sent; a new test is the way) nor deliveries to a deleted endpoint,
// which could otherwise never leave the count. It reads the partial index
// of undelivered deliveries (migration 00006), hence the state written in
// the query: a generic plan for a parameter could not use that index.
func (s *Service) UndeliveredOf(ctx context.Context, merchantID string) (int64, error) {
	var n int64
	err := s.db.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.merchant_id = $1 AND d.state = 'undelivered' AND NOT d.test AND e.deleted_at IS NULL`, merchantID).Scan(&n)
	return n, err
}

// CountUndelivered counts every merchant's deliveries that are undelivered
// (their automatic attempts are spent, or their endpoint was disabled) and
// wait for a person to re-send them; test events are left out. The metrics
// collector calls it at most once per refresh (see internal/metrics): no
// index covers state = 'undelivered', so this is a scan of the deliveries.
func (s *Service) CountUndelivered(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE state = $1 AND NOT test`,
		string(StateUndelivered)).Scan(&n)
	return n, err
}
