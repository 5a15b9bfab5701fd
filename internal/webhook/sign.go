package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// secretPrefix marks a Standard Webhooks signing secret. Keeping the stock
// form lets receivers paste the secret into the standardwebhooks libraries
// unchanged (DESIGN.md §4, "extra headers").
const secretPrefix = "whsec_"

// Standard Webhooks asks for keys of 24 to 64 bytes; anything outside that is
// a truncated or mistyped secret rather than a real one, so signing refuses it.
const (
	minSecretKeyLen = 24
	maxSecretKeyLen = 64
)

// UserAgent is sent on every delivery, as section 6.3 of the contract requires.
const UserAgent = "Service-Webhook/1.0"

// NewSecret returns a fresh endpoint signing secret: "whsec_" followed by the
// standard base64 of 32 random bytes. The same string serves both signatures:
// the contract's X-Service-Signature keys on the whole string, while the
// Standard Webhooks signature keys on the decoded bytes.
func NewSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhook: generate secret: %w", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// Signature returns the contract's X-Service-Signature value (section 6.4):
// "sha256=" and the lowercase hex HMAC-SHA256 of body. The key is the whole
// secret string, prefix included, because that is what a receiver following
// only the contract will feed to its HMAC. body must be the exact bytes sent:
// re-encoding JSON can change them and break the receiver's check.
func Signature(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// StandardSignature returns the Standard Webhooks webhook-signature value:
// "v1," and the standard base64 HMAC-SHA256 of "msgID.unixSeconds.body",
// keyed with the decoded bytes of secret. Binding the id and timestamp into
// the MAC is what lets stock verifiers reject replays; the error reports a
// secret that is not in the "whsec_" + base64 form.
func StandardSignature(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// secretKey decodes the key bytes of a "whsec_" secret. The prefix is
// required: every secret this service issues has it, so its absence means the
// wrong value was passed, and signing with it would silently fail verification.
func secretKey(secret string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, errors.New(`webhook: secret must start with "whsec_"`)
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, errors.New("webhook: secret is not valid base64 after \"whsec_\"")
	}
	if len(key) < minSecretKeyLen || len(key) > maxSecretKeyLen {
		return nil, fmt.Errorf("webhook: secret key is %d bytes, want %d to %d", len(key), minSecretKeyLen, maxSecretKeyLen)
	}
	return key, nil
}

// SignedHeaders returns the headers of one delivery attempt: the contract's
// set (section 6.3) and the Standard Webhooks trio, so a receiver can verify
// with either. deliveryID is both X-Service-Delivery-Id and webhook-id,
// because it is the one value that stays the same across retries and that
// receivers dedupe on. X-Service-Event is left out when event is empty (the
// contract does not show it on the test event) and X-Service-Test appears only
// when test is true. ts is the time of this attempt, not of the event: stock
// verifiers refuse timestamps too far from their clock.
func SignedHeaders(secret, deliveryID, event string, ts time.Time, body []byte, test bool) (http.Header, error) {
	if deliveryID == "" {
		return nil, errors.New("webhook: delivery id is required")
	}
	std, err := StandardSignature(secret, deliveryID, ts, body)
	if err != nil {
		return nil, err
	}
	h := make(http.Header)
	h.Set("Content-Type", "application/json")
	h.Set("X-Service-Signature", Signature(secret, body))
	if event != "" {
		h.Set("X-Service-Event", event)
	}
	h.Set("X-Service-Delivery-Id", deliveryID)
	h.Set("User-Agent", UserAgent)
	if test {
		h.Set("X-Service-Test", "true")
	}
	h.Set("webhook-id", deliveryID)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", std)
	return h, nil
}

// AddPreviousSignature appends to h's webhook-signature a second signature
// made with previous, a secret rotated out but still valid: Standard
// Webhooks carries several space-separated signatures and a receiver
// accepts the message when any one verifies, so a receiver still holding
// the old secret keeps working while the merchant deploys the new one.
// X-Service-Signature keeps the one value the contract describes, made with
// the current secret. A malformed previous secret adds nothing.
func AddPreviousSignature(h http.Header, previous, msgID string, ts time.Time, body []byte) {
	old, err := StandardSignature(previous, msgID, ts, body)
	if err != nil {
		return
	}
	if cur := h.Get("webhook-signature"); cur != "" {
		old = cur + " " + old
	}
	h.Set("webhook-signature", old)
}
