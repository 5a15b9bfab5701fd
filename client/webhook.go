package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Event names (docs/webhooks.md, Events).
const (
	EventTransactionSuccess = "transaction.success"
	EventTransactionFailed  = "transaction.failed"
	EventTransactionTimeout = "transaction.timeout"
	// EventTransactionTest is sent from the dashboard (or momopay webhook
	// test) to check connectivity;
	// its data is fictitious, so never settle an order on it.
	EventTransactionTest = "transaction.test"
)

// DefaultWebhookTolerance is how far webhook-timestamp may be from the
// receiver's clock, the Standard Webhooks default: wide enough for clock
// skew, narrow enough that a captured delivery cannot be replayed later.
const DefaultWebhookTolerance = 5 * time.Minute

var (
	// ErrInvalidSignature means the delivery was not signed with the secret:
	// a header is missing or malformed, the body was altered, or the secret
	// is wrong. Answer 401 and do not act on the body.
	ErrInvalidSignature = errors.New("momopay: invalid webhook signature")
	// ErrTimestampTooOld means a correctly signed delivery was signed longer
	// ago than the tolerance: a replay, or a receiver clock far ahead.
	ErrTimestampTooOld = errors.New("momopay: webhook timestamp too old")
	// ErrTimestampTooNew means webhook-timestamp lies further in the future
	// than the tolerance, usually a receiver clock far behind.
	ErrTimestampTooNew = errors.New("momopay: webhook timestamp too new")
)

// Event is a verified webhook delivery.
type Event struct {
	Event     string    `json:"event"` // one of the Event… constants
	Data      EventData `json:"data"`
	Timestamp time.Time `json:"timestamp"`
	// DeliveryID is the signed webhook-id: the same on every retry and
	// manual re-send of one delivery, so it is the deduplication key. It is
	// taken from webhook-id, not X-Service-Delivery-Id (which carries the
	// same value but is signed by nothing), so a replay cannot pass
	// deduplication under a made-up id.
	DeliveryID string `json:"-"`
	// Test is true for the dashboard's test event (fictitious data), as
	// its signed body says (event transaction.test); the X-Service-Test
	// header, which is not signed, is not believed.
	Test bool `json:"-"`
}

// EventData is the transaction an event is about (docs/webhooks.md, The body).
type EventData struct {
	ID          string    `json:"id"`
	Reference   string    `json:"reference"`
	InternalRef string    `json:"internal_ref"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	Operator    Operator  `json:"operator"`
	PhoneNumber string    `json:"phone_number"`
	Description *string   `json:"description"`
	Status      Status    `json:"status"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	UpdatedAt   time.Time `json:"updated_at,omitzero"`
	// ConfirmedAt appears only in the test event, where it is always null.
	ConfirmedAt *time.Time `json:"confirmed_at,omitempty"`
}

// VerifyWebhook authenticates a delivery and decodes it. body must be the
// raw request bytes: the signature covers bytes, and re-encoding parsed JSON
// changes them. See VerifyWebhookAt for what is checked.
func VerifyWebhook(secret string, body []byte, h http.Header) (*Event, error) {
	return VerifyWebhookAt(secret, body, h, time.Now(), DefaultWebhookTolerance)
}

// VerifyWebhookAt is VerifyWebhook with the clock and tolerance given, for
// tests and for receivers that queue deliveries before verifying them.
//
// It requires the Standard Webhooks headers (webhook-id, webhook-timestamp,
// webhook-signature), which momopay sends on every delivery, the test event
// included: one of the "v1," signatures over id.timestamp.body, keyed with
// the base64-decoded part of the secret after "whsec_", must match, and the
// timestamp must be within tolerance of now (tolerance <= 0 means the
// default). That signature binds a time and the delivery id to the body,
// which is what stops replays, so a delivery without it is refused rather
// than trusted forever. X-Service-Delivery-Id, when present, must equal
// webhook-id. Comparisons are constant-time.
//
// X-Service-Signature, the HMAC of the body alone, is not checked: it adds
// nothing to a verified webhook-signature, and after a secret rotation it is
// made with the new secret only, while webhook-signature carries a signature
// with the previous secret too for 24 hours. So a receiver still running
// with the previous secret keeps verifying deliveries until it is deployed
// with the new one.
func VerifyWebhookAt(secret string, body []byte, h http.Header, now time.Time, tolerance time.Duration) (*Event, error) {
	if secret == "" {
		// An empty HMAC key is one anybody can sign with: a missing
		// environment variable must not turn verification off.
		return nil, fmt.Errorf("%w: no webhook secret configured", ErrInvalidSignature)
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	if err := verifyStandardWebhook(secret, body, id, ts, sigs, now, tolerance); err != nil {
		return nil, err
	}
	if xid := h.Get("X-Service-Delivery-Id"); xid != "" && xid != id {
		// momopay sends the same value in both; only webhook-id is signed.
		return nil, fmt.Errorf("%w: X-Service-Delivery-Id differs from the signed webhook-id", ErrInvalidSignature)
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("momopay: decoding a correctly signed webhook: %w", err)
	}
	ev.DeliveryID = id
	// From the signed body only: X-Service-Test is not signed, so a copy
	// of a real delivery with it added must not pass for a test (a
	// receiver that skips tests would then record the real delivery as
	// handled, and skip it when it comes).
	ev.Test = ev.Event == EventTransactionTest
	return &ev, nil
}

// verifyStandardWebhook checks the Standard Webhooks signature and the
// timestamp it signs (https://www.standardwebhooks.com).
func verifyStandardWebhook(secret string, body []byte, id, ts, sigs string, now time.Time, tolerance time.Duration) error {
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("%w: missing webhook-id, webhook-timestamp or webhook-signature, which momopay sends on every delivery", ErrInvalidSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp is not a Unix time", ErrInvalidSignature)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("%w: the secret is not of the form whsec_<base64>", ErrInvalidSignature)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	matched := false
	for _, s := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue // other schemes (e.g. v1a) are not ours to check
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("%w: no webhook-signature matches", ErrInvalidSignature)
	}
	// Checked after the signature, so a stale error means "authentic but old".
	signedAt := time.Unix(sec, 0)
	switch {
	case now.Sub(signedAt) > tolerance:
		return fmt.Errorf("%w: signed at %s", ErrTimestampTooOld, signedAt.UTC().Format(time.RFC3339))
	case signedAt.Sub(now) > tolerance:
		return fmt.Errorf("%w: signed at %s", ErrTimestampTooNew, signedAt.UTC().Format(time.RFC3339))
	}
	return nil
}
