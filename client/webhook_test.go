package client_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/client"
	"github.com/momopay/momopay/internal/webhook"
)

// testSecret has the form momopay issues: "whsec_" + base64 of 32 bytes.
const testSecret = "whsec_c2VjcmV0LWtleS1mb3ItbW9tb3BheS10ZXN0cyEhIQ=="

// A production event as the service sends it: the key order and spacing are
// the service's, which is why re-encoding it breaks the signature.
const testBody = `{"event":"transaction.failed","data":{"id":"9f1d2c3b-1111-4a2b-8c3d-444455556666",` +
	`"reference":"order-7","internal_ref":"SERVICE-AB12CD34","amount":1500,"currency":"XAF",` +
	`"operator":"MOOV","phone_number":"+23599000000","description":"Two bags of rice","status":"FAILED",` +
	`"created_at":"2026-11-02T10:00:00Z","updated_at":"2026-11-02T10:01:30.5Z"},"timestamp":"2026-11-02T10:01:31Z"}`

var signedAt = time.Date(2026, 11, 2, 10, 1, 31, 0, time.UTC)

// signedHeaders signs body the way internal/webhook does: both the contract's
// header and the Standard Webhooks trio.
func signedHeaders(t *testing.T, secret, deliveryID string, at time.Time, body []byte) http.Header {
	t.Helper()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Service-Signature", sign(secret, string(body)))
	h.Set("X-Service-Delivery-Id", deliveryID)
	h.Set("X-Service-Event", "transaction.failed")
	ts := strconv.FormatInt(at.Unix(), 10)
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(deliveryID + "." + ts + "."))
	mac.Write(body)
	h.Set("webhook-id", deliveryID)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return h
}

func TestVerifyWebhookAccepts(t *testing.T) {
	body := []byte(testBody)
	h := signedHeaders(t, testSecret, "d-1", signedAt, body)
	rotated := h.Clone() // several signatures, as during secret rotation
	rotated.Set("webhook-signature", "v1,AAAA v1a,ignored "+h.Get("webhook-signature"))
	noDeliveryID := h.Clone() // only webhook-id, which is the signed one
	noDeliveryID.Del("X-Service-Delivery-Id")

	for name, hdr := range map[string]http.Header{"both schemes": h, "signature list": rotated, "no X-Service-Delivery-Id": noDeliveryID} {
		t.Run(name, func(t *testing.T) {
			ev, err := client.VerifyWebhookAt(testSecret, body, hdr, signedAt.Add(time.Minute), 0)
			if err != nil {
				t.Fatalf("VerifyWebhookAt: %v", err)
			}
			d := ev.Data
			if ev.Event != client.EventTransactionFailed || ev.DeliveryID != "d-1" || ev.Test ||
				!ev.Timestamp.Equal(signedAt) {
				t.Errorf("event = %q, delivery %q, test %v, timestamp %v", ev.Event, ev.DeliveryID, ev.Test, ev.Timestamp)
			}
			if d.ID != "9f1d2c3b-1111-4a2b-8c3d-444455556666" || d.Reference != "order-7" ||
				d.InternalRef != "SERVICE-AB12CD34" || d.Amount != 1500 || d.Currency != "XAF" ||
				d.Operator != client.OperatorMoov || d.PhoneNumber != "+23599000000" || d.Status != client.StatusFailed {
				t.Errorf("data = %+v", d)
			}
			if d.Description == nil || *d.Description != "Two bags of rice" {
				t.Errorf("description = %v", d.Description)
			}
			if want := signedAt.Add(-time.Second + 500*time.Millisecond); !d.UpdatedAt.Equal(want) {
				t.Errorf("updated_at = %v, want %v", d.UpdatedAt, want)
			}
		})
	}
}

func TestVerifyWebhookRejects(t *testing.T) {
	body := []byte(testBody)
	valid := func() http.Header { return signedHeaders(t, testSecret, "d-1", signedAt, body) }

	reencoded := func() []byte {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(b, body) {
			t.Fatal("re-encoding did not change the bytes; the case would prove nothing")
		}
		return b
	}()

	tests := []struct {
		name   string
		body   []byte
		secret string
		header func() http.Header
		now    time.Time
		want   error
	}{
		{"empty secret (anyone can sign with it)", body, "", func() http.Header {
			h := http.Header{}
			h.Set("X-Service-Signature", sign("", testBody))
			return h
		}, signedAt, client.ErrInvalidSignature},
		{"tampered body", bytes.Replace(body, []byte("1500"), []byte("9500"), 1), testSecret, valid, signedAt, client.ErrInvalidSignature},
		{"wrong secret", body, "whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldC1vdGhlciE=", valid, signedAt, client.ErrInvalidSignature},
		{"re-serialised JSON", reencoded, testSecret, valid, signedAt, client.ErrInvalidSignature},
		{"replayed old delivery", body, testSecret, valid, signedAt.Add(5*time.Minute + time.Second), client.ErrTimestampTooOld},
		{"timestamp from the future", body, testSecret, valid, signedAt.Add(-6 * time.Minute), client.ErrTimestampTooNew},
		{"Standard Webhooks headers stripped (a replay made timeless)", body, testSecret, func() http.Header {
			h := valid()
			for _, k := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
				h.Del(k)
			}
			return h
		}, signedAt.Add(30 * 24 * time.Hour), client.ErrInvalidSignature},
		{"X-Service-Delivery-Id other than the signed webhook-id", body, testSecret, func() http.Header {
			h := valid() // a replay dressed as a new delivery to pass deduplication
			h.Set("X-Service-Delivery-Id", "d-forged")
			return h
		}, signedAt, client.ErrInvalidSignature},
		{"webhook-signature missing while webhook-id present", body, testSecret, func() http.Header {
			h := valid()
			h.Del("webhook-signature")
			return h
		}, signedAt, client.ErrInvalidSignature},
		{"timestamp moved without re-signing", body, testSecret, func() http.Header {
			h := valid() // the replay trick: keep the signatures, refresh the time
			h.Set("webhook-timestamp", strconv.FormatInt(signedAt.Add(time.Hour).Unix(), 10))
			return h
		}, signedAt.Add(time.Hour), client.ErrInvalidSignature},
		{"only an unknown signature version", body, testSecret, func() http.Header {
			h := valid()
			h.Set("webhook-signature", "v2,"+h.Get("webhook-signature")[len("v1,"):])
			return h
		}, signedAt, client.ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := client.VerifyWebhookAt(tt.secret, tt.body, tt.header(), tt.now, client.DefaultWebhookTolerance)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if ev != nil {
				t.Errorf("event returned with an error: %+v", ev)
			}
		})
	}
}

// The refusal of a delivery without the Standard Webhooks headers says why a
// receiver may rely on them, for whoever reads it in the logs.
func TestVerifyWebhookMissingStandardHeadersMessage(t *testing.T) {
	h := http.Header{}
	h.Set("X-Service-Signature", sign(testSecret, testBody))
	_, err := client.VerifyWebhookAt(testSecret, []byte(testBody), h, signedAt, 0)
	if !errors.Is(err, client.ErrInvalidSignature) || !strings.Contains(err.Error(), "momopay sends") {
		t.Errorf("err = %v, want ErrInvalidSignature saying momopay sends them on every delivery", err)
	}
}

func TestVerifyWebhookToleranceBoundary(t *testing.T) {
	body := []byte(testBody)
	h := signedHeaders(t, testSecret, "d-1", signedAt, body)
	if _, err := client.VerifyWebhookAt(testSecret, body, h, signedAt.Add(5*time.Minute), 0); err != nil {
		t.Errorf("exactly the tolerance: %v", err)
	}
	if _, err := client.VerifyWebhookAt(testSecret, body, h, signedAt.Add(2*time.Minute), time.Minute); !errors.Is(err, client.ErrTimestampTooOld) {
		t.Errorf("custom tolerance of 1m, 2m late: err = %v", err)
	}
}

func TestVerifyWebhookTestEvent(t *testing.T) {
	body := []byte(`{"event":"transaction.test","data":{"id":"00000000-0000-0000-0000-000000000000",` +
		`"reference":"test","amount":100,"currency":"XAF","operator":"AIRTEL","phone_number":"+23500000000",` +
		`"status":"SUCCESS","confirmed_at":null},"timestamp":"2026-11-02T10:01:31Z"}`)
	h := signedHeaders(t, testSecret, "d-test", signedAt, body)
	h.Set("X-Service-Test", "true")
	h.Del("X-Service-Event")
	ev, err := client.VerifyWebhookAt(testSecret, body, h, signedAt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Test || ev.Event != client.EventTransactionTest || ev.Data.ConfirmedAt != nil || ev.Data.Amount != 100 {
		t.Errorf("event = %+v", ev)
	}
}

// TestVerifyWebhookTestHeaderIsNotTrusted: X-Service-Test is not signed,
// so a copy of a real delivery with it added is still the real event. (A
// receiver that returns early on Test marked the delivery handled, and then
// skipped the genuine one as a duplicate.)
func TestVerifyWebhookTestHeaderIsNotTrusted(t *testing.T) {
	h := signedHeaders(t, testSecret, "d-real", signedAt, []byte(testBody))
	h.Set("X-Service-Test", "true")
	ev, err := client.VerifyWebhookAt(testSecret, []byte(testBody), h, signedAt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Test || ev.Event != client.EventTransactionFailed {
		t.Errorf("a real %s with X-Service-Test added: Test = %v", ev.Event, ev.Test)
	}
}

func TestVerifyWebhookDeliveryIDIsWebhookID(t *testing.T) {
	body := []byte(testBody)
	h := signedHeaders(t, testSecret, "d-9", signedAt, body)
	h.Del("X-Service-Delivery-Id")
	ev, err := client.VerifyWebhookAt(testSecret, body, h, signedAt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.DeliveryID != "d-9" {
		t.Errorf("DeliveryID = %q, want the webhook-id d-9", ev.DeliveryID)
	}
}

// TestVerifyWebhookAcceptsServerSigner checks the SDK against the signer the
// service really uses, so the two cannot drift apart unnoticed.
func TestVerifyWebhookAcceptsServerSigner(t *testing.T) {
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(testBody)
	h, err := webhook.SignedHeaders(secret, "d-42", client.EventTransactionFailed, signedAt, body, false)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := client.VerifyWebhookAt(secret, body, h, signedAt.Add(time.Second), 0)
	if err != nil {
		t.Fatalf("a delivery signed by internal/webhook does not verify: %v", err)
	}
	if ev.DeliveryID != "d-42" || ev.Data.Amount != 1500 {
		t.Errorf("event = %+v", ev)
	}
	if _, err := client.VerifyWebhookAt(secret, body, h, signedAt.Add(time.Hour), 0); !errors.Is(err, client.ErrTimestampTooOld) {
		t.Errorf("an hour later: err = %v, want ErrTimestampTooOld", err)
	}
}
