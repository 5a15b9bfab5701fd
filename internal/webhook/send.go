package webhook

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// drainLimit is how much of an answer beyond the excerpt is read and thrown
// away so the connection can be reused; past it the connection is dropped.
const drainLimit = 64 << 10

// maxErrorText bounds the error text kept with an attempt.
const maxErrorText = 512

// message is one signed POST to make.
type message struct {
	url, secret, deliveryID, event string
	// previous is a rotated-out secret still valid at this attempt: the
	// attempt carries a second webhook-signature made with it.
	previous string
	body     []byte
	test     bool
	// at is when the attempt was claimed and recorded: it is also sent as
	// webhook-timestamp, so the history and the receiver agree.
	at time.Time
}

// send makes one attempt and describes its outcome; it never returns an
// error because every failure is an outcome to record. It touches no
// database, so nothing is held while the receiver takes its time. ctx
// cancellation (shutdown) ends the attempt early; callers tell that apart
// with ctx.Err().
func (s *Service) send(ctx context.Context, m message) DeliveryAttempt {
	start := time.Now()
	out := s.post(ctx, m)
	if s.observe != nil {
		s.observe(attemptOutcome(ctx, &out), time.Since(start))
	}
	return out
}

// Outcomes of an attempt, as told to Config.ObserveAttempt: a bounded set,
// for metrics labels.
const (
	OutcomeDelivered    = "delivered"     // a 2xx
	OutcomeHTTPError    = "http_error"    // any other status, 3xx included
	OutcomeTimeout      = "timeout"       // no answer within the timeout
	OutcomeRefused      = "refused"       // the URL or its address is not allowed
	OutcomeNetworkError = "network_error" // no answer: DNS, connection, TLS
	OutcomeInterrupted  = "interrupted"   // the service shut down during it
)

func attemptOutcome(ctx context.Context, a *DeliveryAttempt) string {
	switch {
	case a.Succeeded:
		return OutcomeDelivered
	case a.StatusCode != 0:
		return OutcomeHTTPError
	case ctx.Err() != nil:
		return OutcomeInterrupted
	case strings.HasPrefix(a.Error, "timeout"):
		return OutcomeTimeout
	case strings.HasPrefix(a.Error, "refused"):
		return OutcomeRefused
	}
	return OutcomeNetworkError
}

// post is send without the observation.
func (s *Service) post(ctx context.Context, m message) DeliveryAttempt {
	out := DeliveryAttempt{AttemptedAt: m.at}
	// The URL was checked at registration; checking again here keeps an
	// endpoint registered under sandbox rules from being used in live mode.
	if err := ValidateURL(m.url, s.live); err != nil {
		out.Error = "refused: " + err.Error()
		return out
	}
	header, err := SignedHeaders(m.secret, m.deliveryID, m.event, m.at, m.body, m.test)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	if m.previous != "" {
		AddPreviousSignature(header, m.previous, m.deliveryID, m.at, m.body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(m.body))
	if err != nil {
		out.Error = "invalid request: " + err.Error()
		return out
	}
	req.Header = header
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		out.LatencyMS = time.Since(start).Milliseconds()
		out.Error = s.describe(err)
		return out
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, ExcerptLimit))
	io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	resp.Body.Close()
	out.LatencyMS = time.Since(start).Milliseconds()
	out.StatusCode, out.Succeeded = resp.StatusCode, success(resp.StatusCode)
	out.ResponseExcerpt = excerptText(excerpt)
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		out.Error = "redirect not followed: a 3xx answer is a failure"
	}
	return out
}

// describe turns a client error into text for the merchant: the cause
// without Go's "Post <url>:" wrapping, a plain word for a timeout, and a
// failed DNS lookup without the resolver's address.
func (s *Service) describe(err error) string {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return fmt.Sprintf("timeout: no answer within %s", s.timeout)
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	msg := err.Error()
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		// Its own text names the resolver this server asked (an address
		// of the operator's network): the merchant needs the name only.
		msg = "DNS lookup of " + de.Name + " failed: " + de.Err
	}
	if errors.Is(err, ErrForbiddenAddress) {
		msg = "refused: " + msg
	}
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText]
	}
	return clean(msg)
}

// excerptText makes the first bytes of an answer storable text of at most
// ExcerptLimit bytes; the cut at 1 KiB can split a character, which is
// dropped rather than stored as garbage.
func excerptText(b []byte) string {
	s := clean(string(trimPartialRune(b)))
	for len(s) > ExcerptLimit { // replacement characters can lengthen binary answers
		s = clean(string(trimPartialRune([]byte(s[:ExcerptLimit]))))
	}
	return s
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// clean makes receiver-controlled text storable on both engines:
// PostgreSQL's text refuses NUL bytes and invalid UTF-8, which a cut at 1 KiB
// or a binary answer can produce.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// TestResult is the answer to a test event, shown to the merchant at once.
type TestResult struct {
	// DeliveryID is the X-Service-Delivery-Id and webhook-id sent, so the
	// merchant can find the request in their receiver's log; it is also the
	// id of the test's delivery in the history.
	DeliveryID string `json:"delivery_id"`
	DeliveryAttempt
}

// Test sends the transaction.test event to one of the merchant's endpoints,
// once and synchronously, signed with the endpoint's real secret and marked
// X-Service-Test: true. It is never retried. It is recorded in the history
// as a test delivery (no transaction) with its one attempt, written before
// the POST leaves like every attempt: delivered on a 2xx, otherwise
// undelivered, and it cannot be re-sent (a new test is the way to try
// again). A disabled endpoint can be tested (checking it before enabling is
// the point); a deleted one cannot. While ManualPerEndpoint sends asked by
// hand wait on the endpoint, it is refused with ErrManualBusy. An error means the test could not be
// made; a receiver's refusal is a result with Succeeded false.
func (s *Service) Test(ctx context.Context, merchantID, endpointID string) (*TestResult, error) {
	e, err := s.endpointSecret(ctx, merchantID, endpointID)
	if err != nil {
		return nil, err
	}
	leave, err := s.manual.enter(endpointID)
	if err != nil {
		return nil, err
	}
	defer leave()
	now := s.stamp()
	body, err := testPayload(now)
	if err != nil {
		return nil, err
	}
	d := &target{merchantID: merchantID, id: uuid.NewString(), event: EventTest, payload: string(body),
		state: StateUndelivered, test: true, url: e.url, secret: e.secret, previous: e.previous, previousUntil: e.previousUntil}
	c, err := s.recordTest(ctx, d, endpointID, now)
	if err != nil {
		return nil, err
	}
	// The contract does not show X-Service-Event on the test event, so it
	// is left out (SignedHeaders omits it for an empty event); the body
	// names the event.
	m := d.message(c.at)
	m.event, m.test = "", true
	res := s.send(ctx, m)
	if err := ctx.Err(); err != nil && !res.Succeeded {
		s.interrupt(d, c, interruptedByShutdown)
		return nil, err
	}
	state := StateUndelivered
	if res.Succeeded {
		state = StateDelivered
	}
	if err := s.finish(context.WithoutCancel(ctx), d, c, &res, state, time.Time{}, s.stamp()); err != nil {
		return nil, err
	}
	s.log.Info("webhook test event sent", "merchant_id", merchantID, "endpoint_id", endpointID,
		"delivery_id", d.id, "status_code", res.StatusCode, "error", res.Error)
	return &TestResult{DeliveryID: d.id, DeliveryAttempt: res}, nil
}

// recordTest writes the test delivery d, undelivered, with its one manual
// attempt "sending" and the lease that attempt holds, in one transaction.
func (s *Service) recordTest(ctx context.Context, d *target, endpointID string, now time.Time) (*claimed, error) {
	c := &claimed{id: uuid.NewString(), number: 1, manual: true, at: now}
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries
			(id, merchant_id, endpoint_id, event, transaction_id, test, payload, state, attempts, lease_until, created_at, updated_at)
			VALUES ($1, $2, $3, $4, NULL, TRUE, $5, $6, 1, $7, $8, $8)`,
			d.id, d.merchantID, endpointID, d.event, d.payload, string(d.state), s.db.Time(now.Add(s.lease())), s.db.Time(now)); err != nil {
			return err
		}
		return s.insertAttempt(ctx, tx, d, c)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
