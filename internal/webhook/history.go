package webhook

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// Events lists every event a delivery can carry, for filters and forms.
var Events = []string{
	payment.StatusSuccess.Event(), payment.StatusFailed.Event(), payment.StatusTimeout.Event(), EventTest,
}

// MaxDeliveryLimit bounds one page of the delivery history.
const MaxDeliveryLimit = 100

// DeliveryFilter selects part of a merchant's delivery history. Zero values
// mean "any". After is the id of the last delivery of the previous page
// (DeliveryPage.Next): pages are read by position, newest first, so a
// delivery added meanwhile neither repeats nor hides a row.
type DeliveryFilter struct {
	State         DeliveryState
	Event         string
	EndpointID    string
	TransactionID string
	// Resendable keeps only what a person can still re-send: no test
	// event (never re-sent; a new test is the way) and no delivery to a
	// deleted endpoint. The dashboard's undelivered alert counts these.
	Resendable bool
	After      string
	// Limit is the page size: DefaultDeliveryLimit when 0, at most
	// MaxDeliveryLimit.
	Limit int
}

// Validate reports a filter value that cannot select anything, as a
// payment.EINVALID error naming the field.
func (f *DeliveryFilter) Validate() error {
	fields := map[string]string{}
	switch f.State {
	case "", StatePending, StateDelivered, StateUndelivered:
	default:
		fields["state"] = "must be pending, delivered or undelivered"
	}
	if f.Event != "" && !validEvent(f.Event) {
		fields["event"] = "must be one of " + strings.Join(Events, ", ")
	}
	for name, id := range map[string]string{"endpoint": f.EndpointID, "transaction_id": f.TransactionID, "after": f.After} {
		if id != "" && !payment.ValidID(id) {
			fields[name] = "must be an id (UUID)"
		}
	}
	if f.Limit < 0 || f.Limit > MaxDeliveryLimit {
		fields["limit"] = fmt.Sprintf("must be between 1 and %d", MaxDeliveryLimit)
	}
	if len(fields) > 0 {
		return &payment.Error{Code: payment.EINVALID, Message: "invalid delivery filter", Fields: fields}
	}
	return nil
}

func validEvent(e string) bool {
	for _, v := range Events {
		if v == e {
			return true
		}
	}
	return false
}

// DeliveryPage is one page of the history; Next is the After of the
// following page, "" on the last one.
type DeliveryPage struct {
	Deliveries []Delivery
	Next       string
}

// History returns one page of the merchant's deliveries matching f, newest
// first, each with every attempt, read in one snapshot. A filter naming
// another merchant's endpoint or transaction matches nothing.
func (s *Service) History(ctx context.Context, merchantID string, f DeliveryFilter) (*DeliveryPage, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	page := &DeliveryPage{Deliveries: []Delivery{}}
	if !isUUID(merchantID) {
		return page, nil
	}
	if f.Limit == 0 {
		f.Limit = DefaultDeliveryLimit
	}
	where := []string{"d.merchant_id = $1"}
	args := []any{merchantID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.State != "" {
		add("d.state = $%d", string(f.State))
	}
	if f.Event != "" {
		add("d.event = $%d", f.Event)
	}
	if f.EndpointID != "" {
		add("d.endpoint_id = $%d", f.EndpointID)
	}
	if f.TransactionID != "" {
		add("d.transaction_id = $%d", f.TransactionID)
	}
	if f.Resendable {
		where = append(where, "NOT d.test", "e.deleted_at IS NULL")
	}
	if f.After != "" {
		// Row-value comparison on the listing's order; an unknown cursor
		// (NULL) matches nothing.
		args = append(args, f.After)
		where = append(where, fmt.Sprintf(`(d.created_at, d.id) < (SELECT c.created_at, c.id FROM webhook_deliveries c
			WHERE c.merchant_id = $1 AND c.id = $%d)`, len(args)))
	}
	args = append(args, f.Limit+1)
	query := fmt.Sprintf(`SELECT %s
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.merchant_id = d.merchant_id
		WHERE %s ORDER BY d.created_at DESC, d.id DESC LIMIT $%d`, deliveryColumns, strings.Join(where, " AND "), len(args))
	ds, err := s.list(ctx, merchantID, query, args...)
	if err != nil {
		return nil, err
	}
	if len(ds) > f.Limit {
		ds = ds[:f.Limit]
		page.Next = ds[len(ds)-1].ID
	}
	page.Deliveries = ds
	return page, nil
}

// list runs a delivery query and reads the attempts of what it found, in
// one snapshot, so a delivery's state and its attempts always agree.
func (s *Service) list(ctx context.Context, merchantID, query string, args ...any) ([]Delivery, error) {
	out := []Delivery{}
	err := s.db.InSnapshot(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		byID := map[string]int{}
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				rows.Close()
				return err
			}
			byID[d.ID] = len(out)
			out = append(out, *d)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil || len(out) == 0 {
			return err
		}
		ids := make([]string, 0, len(out))
		for _, d := range out {
			ids = append(ids, d.ID)
		}
		now := s.stamp()
		return attempts(ctx, tx, merchantID, ids, func(deliveryID string, a DeliveryAttempt, stage string) {
			out[byID[deliveryID]].addAttempt(a, stage, now)
		})
	})
	return out, err
}

// MaxBulkResend bounds one ResendUndelivered: a merchant whose endpoint was
// down for days asks again for the rest, and no single request holds the
// database (SQLite's one writer) for long.
const MaxBulkResend = 500

// BulkResend says what ResendUndelivered did.
type BulkResend struct {
	// Queued counts the deliveries put back for one manual attempt each.
	Queued int `json:"queued"`
	// More reports undelivered deliveries left over MaxBulkResend: ask again.
	More bool `json:"more"`
	// Disabled counts the undelivered deliveries left out because their
	// endpoint is disabled: the merchant enables it first, and is told so
	// rather than seeing "0 queued" with no reason.
	Disabled int `json:"disabled"`
}

// ResendUndelivered queues one manual attempt of each of the merchant's
// undelivered deliveries whose event happened at or after since (at most
// MaxBulkResend of them, oldest first), optionally only those of one
// endpoint. Test events, deleted and disabled endpoints, and deliveries
// with an attempt in flight are left out; those of disabled endpoints are
// counted (BulkResend.Disabled). Each queued delivery becomes
// pending and due at once, in one transaction; its one attempt
// then makes it delivered on a 2xx, or undelivered again, and is recorded
// as manual. Deliveries already pending (queued by an earlier call, or on
// their automatic schedule) are not touched, so asking twice sends nothing
// twice. A malformed endpointID is a payment.EINVALID error.
func (s *Service) ResendUndelivered(ctx context.Context, merchantID string, since time.Time, endpointID string) (*BulkResend, error) {
	if endpointID != "" && !isUUID(endpointID) {
		return nil, &payment.Error{Code: payment.EINVALID, Message: "invalid endpoint", Fields: map[string]string{"endpoint": "must be an id (UUID)"}}
	}
	out := &BulkResend{}
	if !isUUID(merchantID) {
		return out, nil
	}
	now := s.stamp()
	args := []any{merchantID, s.db.Time(since), s.db.Time(now), MaxBulkResend + 1}
	disabledArgs := []any{merchantID, s.db.Time(since)}
	byEndpoint, disabledByEndpoint := "", ""
	if endpointID != "" {
		args, disabledArgs = append(args, endpointID), append(disabledArgs, endpointID)
		byEndpoint, disabledByEndpoint = " AND d.endpoint_id = $5", " AND d.endpoint_id = $3"
	}
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT d.id FROM webhook_deliveries d
			JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.merchant_id = d.merchant_id
			WHERE d.merchant_id = $1 AND d.state = 'undelivered' AND d.test = FALSE AND d.created_at >= $2
			  AND (d.lease_until IS NULL OR d.lease_until <= $3)
			  AND e.enabled = TRUE AND e.deleted_at IS NULL`+byEndpoint+`
			ORDER BY d.created_at, d.id LIMIT $4`, args...)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(ids) > MaxBulkResend {
			ids, out.More = ids[:MaxBulkResend], true
		}
		var queued []string
		for _, id := range ids {
			// Conditional: a concurrent request (or a manual attempt)
			// that got there first leaves this one nothing to do.
			res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries
				SET state = 'pending', resend_requested_at = $3, next_attempt_at = $3, updated_at = $3
				WHERE merchant_id = $1 AND id = $2 AND state = 'undelivered' AND (lease_until IS NULL OR lease_until <= $3)`,
				merchantID, id, s.db.Time(now))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				continue
			}
			queued = append(queued, id)
		}
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries d
			JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.merchant_id = d.merchant_id
			WHERE d.merchant_id = $1 AND d.state = 'undelivered' AND d.test = FALSE AND d.created_at >= $2
			  AND e.enabled = FALSE AND e.deleted_at IS NULL`+disabledByEndpoint, disabledArgs...).Scan(&out.Disabled); err != nil {
			return err
		}
		if out.Queued = len(queued); out.Queued == 0 {
			return nil
		}
		return s.announceDue(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	if out.Queued > 0 {
		s.Wake() // this process's dispatchers; the NOTIFY tells the others
	}
	s.log.Info("undelivered webhooks queued for re-send", "merchant_id", merchantID, "queued", out.Queued, "more", out.More, "disabled", out.Disabled)
	return out, nil
}
