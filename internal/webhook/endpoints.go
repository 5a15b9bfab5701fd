package webhook

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// Endpoint is a URL where a merchant receives events, with the secret that
// signs them. Secret is filled only by CreateEndpoint and never encoded to
// JSON, so a listing or a log line cannot leak it.
type Endpoint struct {
	ID         string    `json:"id"`
	MerchantID string    `json:"merchant_id"`
	URL        string    `json:"url"`
	Secret     string    `json:"-"`
	Enabled    bool      `json:"enabled"`
	CreatedAt  time.Time `json:"created_at"`
	// PreviousSecretExpiresAt is set while the secret replaced by the last
	// rotation still signs deliveries (RotateSecret), until that time.
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at,omitempty"`
	// ReplacedRecent is set by a RotateSecret that came within
	// RecentRotation of the one before: it replaced that rotation's
	// secret, and the one before it keeps its own grace.
	ReplacedRecent bool `json:"-"`
}

// CreateEndpoint registers url for merchantID with a fresh signing secret,
// enabled. The URL is checked for the service's mode (ValidateURL); a bad
// one gives a payment.EINVALID error whose "url" field says why, written for
// the merchant. A URL the merchant already has an endpoint for (enabled or
// disabled, compared as URLKey does) gives a payment.EUNPROCESSABLE error
// naming "url": a second endpoint would receive every event twice. The
// returned Endpoint carries the secret: show it to the merchant, who needs
// it to verify signatures.
func (s *Service) CreateEndpoint(ctx context.Context, merchantID, url string) (*Endpoint, error) {
	return s.CreateEndpointOnce(ctx, merchantID, url, "")
}

// ErrEndpointAdded is CreateEndpointOnce's answer to a request that
// already added its endpoint.
var ErrEndpointAdded = errors.New("this request already added its webhook endpoint")

// endpointRequests is the namespace of the endpoint ids CreateEndpointOnce
// derives.
var endpointRequests = uuid.MustParse("9b7e3c52-0a4f-4d1e-8c26-5f3a9e71b0d4")

// CreateEndpointOnce is CreateEndpoint for a request that may arrive more
// than once (a dashboard form sent again by a reload): request, chosen by
// the caller for each distinct request, fixes the endpoint's id, so a
// repeat adds nothing and gets the first endpoint, without its secret
// (shown once, the first time), and ErrEndpointAdded. An empty request is
// a new one each time.
func (s *Service) CreateEndpointOnce(ctx context.Context, merchantID, url, request string) (*Endpoint, error) {
	if err := ValidateURL(url, s.live); err != nil {
		return nil, &payment.Error{Code: payment.EINVALID, Message: err.Error(), Fields: map[string]string{"url": err.Error()}, Reason: err}
	}
	if !isUUID(merchantID) {
		return nil, payment.Errorf(payment.ENOTFOUND, "merchant not found")
	}
	id := uuid.NewString()
	if request != "" {
		id = uuid.NewSHA1(endpointRequests, []byte(merchantID+"/"+request)).String()
		first, err := s.endpointByID(ctx, merchantID, id)
		if err != nil {
			return nil, err
		}
		if first != nil {
			return &first.Endpoint, ErrEndpointAdded
		}
	}
	key := URLKey(url)
	if id, err := s.endpointWithKey(ctx, merchantID, key); err != nil {
		return nil, err
	} else if id != "" {
		return nil, duplicateURL(id)
	}
	secret, err := NewSecret()
	if err != nil {
		return nil, err
	}
	e := &Endpoint{ID: id, MerchantID: merchantID, URL: url, Secret: secret, Enabled: true, CreatedAt: s.stamp()}
	err = s.db.InTx(ctx, func(tx *sql.Tx) error { return s.insertEndpoint(ctx, tx, e, key) })
	if errors.Is(err, ErrTooManyEndpoints) {
		return nil, tooManyEndpoints()
	}
	if err != nil && request != "" {
		// The same request, sent twice at once: the other one added it.
		if first, _ := s.endpointByID(ctx, merchantID, id); first != nil {
			return &first.Endpoint, ErrEndpointAdded
		}
	}
	if store.IsUniqueViolation(err, "url_key") {
		// A concurrent registration of the same URL won the race; the
		// unique index let only one of them in.
		id, _ := s.endpointWithKey(ctx, merchantID, key)
		return nil, duplicateURL(id)
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// MaxEndpoints bounds a merchant's endpoints (enabled or disabled; deleted
// ones do not count). Every settlement queues one delivery per enabled
// endpoint, with its payload, in the settling transaction: without a bound
// one merchant registering thousands of URLs would multiply every payment's
// writes and attempts by as many, and slow the service for every merchant
// (an audit's 2,000 endpoints took another merchant's create p99 from 10 ms
// to 700 ms). A merchant's systems need a few; 20 leaves room to migrate.
const MaxEndpoints = 20

// ErrTooManyEndpoints is the Reason of CreateEndpointOnce's refusal of an
// endpoint past MaxEndpoints.
var ErrTooManyEndpoints = fmt.Errorf("a merchant has at most %d webhook endpoints", MaxEndpoints)

func tooManyEndpoints() error {
	msg := fmt.Sprintf("a merchant has at most %d webhook endpoints: delete one you no longer use first", MaxEndpoints)
	return &payment.Error{Code: payment.EUNPROCESSABLE, Message: msg, Fields: map[string]string{"url": msg}, Reason: ErrTooManyEndpoints}
}

// insertEndpoint adds e unless its merchant has MaxEndpoints already. On
// PostgreSQL the merchant's additions take a transaction-scoped advisory
// lock first, so that two concurrent ones cannot both see room for one
// (a lock of the merchant's row would reach into a table store owns);
// SQLite has one writer.
func (s *Service) insertEndpoint(ctx context.Context, tx *sql.Tx, e *Endpoint, key string) error {
	if s.db.Dialect == store.Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhook endpoints of ' || $1, 0))`, e.MerchantID); err != nil {
			return err
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_endpoints WHERE merchant_id = $1 AND deleted_at IS NULL`,
		e.MerchantID).Scan(&n); err != nil {
		return err
	}
	if n >= MaxEndpoints {
		return ErrTooManyEndpoints
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO webhook_endpoints (id, merchant_id, url, url_key, secret, enabled, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.ID, e.MerchantID, e.URL, key, e.Secret, e.Enabled, s.db.Time(e.CreatedAt))
	return err
}

// storedEndpoint is an endpoint as endpointByID reads it: without its
// secret, with what a repeated request is checked against.
type storedEndpoint struct {
	Endpoint
	deleted         bool
	rotationRequest string // the token of the request that made its last rotation
}

// endpointByID returns the merchant's endpoint with id, deleted or not, or
// nil. PreviousSecretExpiresAt is set only while that secret still signs.
func (s *Service) endpointByID(ctx context.Context, merchantID, id string) (*storedEndpoint, error) {
	e := &storedEndpoint{}
	var created, until store.Timestamp
	err := s.db.QueryRowContext(ctx, `SELECT id, merchant_id, url, enabled, created_at, previous_secret_expires_at,
			deleted_at IS NOT NULL, COALESCE(rotation_request, '')
		FROM webhook_endpoints WHERE merchant_id = $1 AND id = $2`, merchantID, id).
		Scan(&e.ID, &e.MerchantID, &e.URL, &e.Enabled, &created, &until, &e.deleted, &e.rotationRequest)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e.CreatedAt = created.Time
	if until.After(s.stamp()) {
		e.PreviousSecretExpiresAt = &until.Time
	}
	return e, nil
}

// duplicateURL is the error for a URL the merchant registered already, as
// endpoint id ("" when the winner of a race could not be read back).
func duplicateURL(id string) error {
	field := "is registered already"
	if id != "" {
		field = fmt.Sprintf("is registered already, as endpoint %s: use that one (enable it if it is disabled) instead of adding a second", id)
	}
	return &payment.Error{Code: payment.EUNPROCESSABLE, Message: "this webhook URL " + field, Fields: map[string]string{"url": field}}
}

// endpointWithKey returns the id of the merchant's endpoint (not deleted)
// whose URL has key, or "". Endpoints registered before URL keys were stored
// have none; their URL is keyed here, so only they and a keyed match are read.
func (s *Service) endpointWithKey(ctx context.Context, merchantID, key string) (string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, url, url_key FROM webhook_endpoints
		WHERE merchant_id = $1 AND deleted_at IS NULL AND (url_key = $2 OR url_key IS NULL)
		ORDER BY created_at, id`, merchantID, key)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var id, url string
		var stored sql.NullString
		if err := rows.Scan(&id, &url, &stored); err != nil {
			return "", err
		}
		if stored.String == key || (!stored.Valid && URLKey(url) == key) {
			return id, nil
		}
	}
	return "", rows.Err()
}

// Endpoints lists the merchant's endpoints that are not deleted, oldest
// first, without their secrets.
func (s *Service) Endpoints(ctx context.Context, merchantID string) ([]Endpoint, error) {
	out := []Endpoint{}
	if !isUUID(merchantID) {
		return out, nil
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT id, merchant_id, url, enabled, created_at, previous_secret_expires_at FROM webhook_endpoints
		WHERE merchant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`, merchantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	now := s.stamp()
	for rows.Next() {
		var e Endpoint
		var created, until store.Timestamp
		if err := rows.Scan(&e.ID, &e.MerchantID, &e.URL, &e.Enabled, &created, &until); err != nil {
			return nil, err
		}
		e.CreatedAt = created.Time
		if until.After(now) {
			e.PreviousSecretExpiresAt = &until.Time
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// SetEndpointEnabled enables or disables one of the merchant's endpoints
// and reports whether this call changed it: of the same switch sent twice,
// or at once, one does, so the audit log records one. A disabled endpoint
// gets no new deliveries, and those already queued for it turn undelivered
// instead of being attempted; enabling it again leaves those so, for the
// merchant to re-send the ones still wanted (Resend).
// ErrEndpointNotFound for an endpoint that is not the merchant's or was
// deleted.
func (s *Service) SetEndpointEnabled(ctx context.Context, merchantID, endpointID string, enabled bool) (bool, error) {
	const query = `UPDATE webhook_endpoints SET enabled = $3
		WHERE merchant_id = $1 AND id = $2 AND deleted_at IS NULL AND enabled <> $3`
	var err error
	if enabled {
		err = s.updateEndpoint(ctx, s.db, query, merchantID, endpointID, enabled)
	} else {
		err = s.stopEndpoint(ctx, query, merchantID, endpointID, enabled)
	}
	if !errors.Is(err, ErrEndpointNotFound) || !isUUID(merchantID, endpointID) {
		return err == nil, err
	}
	// Nothing changed: already so, or no such endpoint.
	e, err := s.endpointByID(ctx, merchantID, endpointID)
	if err != nil {
		return false, err
	}
	if e == nil || e.deleted {
		return false, ErrEndpointNotFound
	}
	return false, nil
}

// stopEndpoint runs query, which disables or deletes an endpoint, and in
// the same transaction makes the deliveries waiting for it undelivered, as
// webhooks.md promises: enabled again, the endpoint gets them only when a
// person re-sends them. Before, they were only made due at once for the
// dispatcher to give up, and an endpoint enabled again before it ran (or
// while no server ran) had them sent after all, ahead of their schedule.
//
// A delivery whose attempt is in flight is left to finish. One whose
// attempt a killed process left open (its lease over) is made due at
// once instead: the dispatcher gives it up, recording that attempt as
// interrupted on the way (giveUp), and this process's dispatchers are
// woken for it (another process's find it at their next poll).
func (s *Service) stopEndpoint(ctx context.Context, query, merchantID, endpointID string, more ...any) error {
	if !isUUID(merchantID, endpointID) {
		return ErrEndpointNotFound
	}
	now := s.db.Time(s.stamp())
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.updateEndpoint(ctx, tx, query, merchantID, endpointID, more...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = $3, next_attempt_at = NULL,
				resend_requested_at = NULL, updated_at = $4
			WHERE merchant_id = $1 AND endpoint_id = $2 AND state = $5 AND lease_until IS NULL`,
			merchantID, endpointID, string(StateUndelivered), now, string(StatePending)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = $3
			WHERE merchant_id = $1 AND endpoint_id = $2 AND state = $4 AND next_attempt_at > $3`,
			merchantID, endpointID, now, string(StatePending))
		return err
	})
	if err != nil {
		return err
	}
	s.Wake()
	return nil
}

// execer runs a statement: the database, or a transaction of it.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// DeleteEndpoint removes an endpoint from the merchant's view. The row stays
// (deleted_at is set) because past deliveries and their attempt history
// refer to it and remain readable; its URL may be registered again.
// Its waiting deliveries turn undelivered at once, as a disabled
// endpoint's do (stopEndpoint).
func (s *Service) DeleteEndpoint(ctx context.Context, merchantID, endpointID string) error {
	return s.stopEndpoint(ctx, `UPDATE webhook_endpoints SET enabled = FALSE, deleted_at = $3
		WHERE merchant_id = $1 AND id = $2 AND deleted_at IS NULL`, merchantID, endpointID, s.db.Time(s.stamp()))
}

// EndpointDeleted reports whether endpointID is one of the merchant's
// endpoints, deleted: the dashboard says "already deleted" to a back
// button rather than "not found". Another merchant's endpoint is false.
func (s *Service) EndpointDeleted(ctx context.Context, merchantID, endpointID string) (bool, error) {
	if !isUUID(merchantID, endpointID) {
		return false, nil
	}
	var deleted bool
	err := s.db.QueryRowContext(ctx, `SELECT deleted_at IS NOT NULL FROM webhook_endpoints
		WHERE merchant_id = $1 AND id = $2`, merchantID, endpointID).Scan(&deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return deleted, err
}

func (s *Service) updateEndpoint(ctx context.Context, db execer, query, merchantID, endpointID string, more ...any) error {
	if !isUUID(merchantID, endpointID) {
		return ErrEndpointNotFound
	}
	res, err := db.ExecContext(ctx, query, append([]any{merchantID, endpointID}, more...)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ErrEndpointNotFound
	}
	return nil
}

// endpointSecret returns the URL and secrets of a live (not deleted)
// endpoint, for the test event, as a target without a delivery.
func (s *Service) endpointSecret(ctx context.Context, merchantID, endpointID string) (*target, error) {
	if !isUUID(merchantID, endpointID) {
		return nil, ErrEndpointNotFound
	}
	var t target
	var previous sql.NullString
	var until store.Timestamp
	err := s.db.QueryRowContext(ctx, `SELECT url, secret, previous_secret, previous_secret_expires_at FROM webhook_endpoints
		WHERE merchant_id = $1 AND id = $2 AND deleted_at IS NULL`, merchantID, endpointID).Scan(&t.url, &t.secret, &previous, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrEndpointNotFound
	}
	if err != nil {
		return nil, err
	}
	t.previous, t.previousUntil = previous.String, until.Time
	return &t, nil
}
