package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/webhook"
)

// hmacHex and hmacB64 compute the expected MACs directly with crypto/hmac, so
// the tests do not trust the code under test to build its own answers.
func hmacHex(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}

func hmacB64(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// specSecret and friends are the fixed vector from the Standard Webhooks
// specification.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specMsgID  = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var specTime = time.Unix(1614265330, 0)

func TestNewSecret(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 20 {
		s, err := webhook.NewSecret()
		if err != nil {
			t.Fatalf("NewSecret: %v", err)
		}
		enc, ok := strings.CutPrefix(s, "whsec_")
		if !ok {
			t.Fatalf("NewSecret() = %q, want whsec_ prefix", s)
		}
		key, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatalf("NewSecret() = %q: not standard base64: %v", s, err)
		}
		if len(key) != 32 {
			t.Fatalf("NewSecret() key is %d bytes, want 32", len(key))
		}
		if seen[s] {
			t.Fatalf("NewSecret() repeated %q", s)
		}
		seen[s] = true
		if _, err := webhook.StandardSignature(s, "msg", specTime, nil); err != nil {
			t.Fatalf("StandardSignature rejects a fresh secret: %v", err)
		}
	}
}

func TestSignature(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret string
		body   string
	}{
		{"spec secret", specSecret, specBody},
		{"empty body", specSecret, ""},
		{"unicode body", "whsec_abc", `{"description":"Achat à N'Djamena"}`},
		{"secret without prefix", "plain-secret", `{"event":"transaction.success"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := webhook.Signature(tt.secret, []byte(tt.body))
			// The key is the whole string, prefix included (the contract's reading).
			want := "sha256=" + hmacHex([]byte(tt.secret), []byte(tt.body))
			if got != want {
				t.Fatalf("Signature = %q, want %q", got, want)
			}
			if len(got) != len("sha256=")+64 || got != strings.ToLower(got) {
				t.Fatalf("Signature = %q, want sha256= and 64 lowercase hex digits", got)
			}
			if tampered := webhook.Signature(tt.secret, []byte(tt.body+" ")); tampered == got {
				t.Fatalf("tampered body gave the same signature %q", got)
			}
			if other := webhook.Signature(tt.secret+"x", []byte(tt.body)); other == got {
				t.Fatalf("other secret gave the same signature %q", got)
			}
		})
	}
}

func TestSignatureFixedVector(t *testing.T) {
	t.Parallel()
	// Computed outside Go with: printf 'hello' | openssl dgst -sha256 -hmac 'whsec_key'.
	// The second value is the same with the key "key": a change of key handling
	// (such as dropping the whsec_ prefix) must not go unnoticed.
	got := webhook.Signature("whsec_key", []byte("hello"))
	if want := "sha256=348c6e2b4e48f9f2a354023090f65526ac9975070633a8ced36b3dcf01bb8ac1"; got != want {
		t.Fatalf("Signature = %q, want %q", got, want)
	}
	if dropped := "sha256=9307b3b915efb5171ff14d8cb55fbcc798c6c0ef1456d66ded1a6aa723a58b7b"; got == dropped {
		t.Fatal("Signature keyed on the secret without its prefix")
	}
}

func TestStandardSignature(t *testing.T) {
	t.Parallel()
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(specSecret, "whsec_"))
	tests := []struct {
		name  string
		msgID string
		ts    time.Time
		body  string
		want  string
	}{
		{"spec vector", specMsgID, specTime, specBody, specSig},
		{"spec vector, non-UTC time", specMsgID, specTime.In(time.FixedZone("WAT", 3600)), specBody, specSig},
		{"independent HMAC", "d-1", time.Unix(1700000000, 999), `{"a":1}`,
			"v1," + hmacB64(key, []byte(`d-1.1700000000.{"a":1}`))},
		{"empty body", "d-2", time.Unix(0, 0), "", "v1," + hmacB64(key, []byte("d-2.0."))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := webhook.StandardSignature(specSecret, tt.msgID, tt.ts, []byte(tt.body))
			if err != nil {
				t.Fatalf("StandardSignature: %v", err)
			}
			if got != tt.want {
				t.Fatalf("StandardSignature = %q, want %q", got, tt.want)
			}
		})
	}

	changes := []struct {
		name  string
		msgID string
		ts    time.Time
		body  string
	}{
		{"tampered body", specMsgID, specTime, `{"test": 2432232315}`},
		{"other id", specMsgID + "x", specTime, specBody},
		{"other timestamp", specMsgID, specTime.Add(time.Second), specBody},
	}
	for _, c := range changes {
		got, err := webhook.StandardSignature(specSecret, c.msgID, c.ts, []byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got == specSig {
			t.Errorf("%s: signature unchanged", c.name)
		}
	}
}

func TestStandardSignatureMalformedSecret(t *testing.T) {
	t.Parallel()
	for name, secret := range map[string]string{
		"empty":          "",
		"no prefix":      strings.TrimPrefix(specSecret, "whsec_"),
		"wrong prefix":   "whsk_" + strings.TrimPrefix(specSecret, "whsec_"),
		"prefix only":    "whsec_",
		"not base64":     "whsec_!!!not*base64!!!",
		"url base64":     "whsec_" + base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xfb\xff", 16))),
		"missing pad":    "whsec_" + base64.RawStdEncoding.EncodeToString(make([]byte, 32)),
		"key too short":  "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16)),
		"key too long":   "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)),
		"trailing space": specSecret + " ",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := webhook.StandardSignature(secret, specMsgID, specTime, []byte(specBody))
			if err == nil {
				t.Fatalf("StandardSignature(%q) = %q, want error", secret, got)
			}
			if got != "" {
				t.Fatalf("StandardSignature(%q) returned %q with an error", secret, got)
			}
		})
	}
}

func TestSignedHeaders(t *testing.T) {
	t.Parallel()
	body := []byte(`{"event":"transaction.success","data":{},"timestamp":"2026-01-02T03:04:05Z"}`)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(specSecret, "whsec_"))
	stdSig := "v1," + hmacB64(key, append([]byte("dlv-1.1767323045."), body...))
	base := map[string]string{
		"Content-Type":          "application/json",
		"X-Service-Signature":   "sha256=" + hmacHex([]byte(specSecret), body),
		"X-Service-Delivery-Id": "dlv-1",
		"User-Agent":            "Service-Webhook/1.0",
		"webhook-id":            "dlv-1",
		"webhook-timestamp":     "1767323045",
		"webhook-signature":     stdSig,
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name  string
		event string
		test  bool
		want  map[string]string
	}{
		{"production event", "transaction.success", false, with(map[string]string{"X-Service-Event": "transaction.success"})},
		{"test event without event header", "", true, with(map[string]string{"X-Service-Test": "true"})},
		{"test event with event header", "transaction.test", true, with(map[string]string{"X-Service-Event": "transaction.test", "X-Service-Test": "true"})},
		{"no event, not test", "", false, base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := webhook.SignedHeaders(specSecret, "dlv-1", tt.event, ts, body, tt.test)
			if err != nil {
				t.Fatalf("SignedHeaders: %v", err)
			}
			if len(h) != len(tt.want) {
				t.Errorf("got %d headers %v, want %d", len(h), h, len(tt.want))
			}
			for k, v := range tt.want {
				if got := h.Values(k); len(got) != 1 || got[0] != v {
					t.Errorf("header %s = %q, want [%q]", k, got, v)
				}
			}
		})
	}
}

func TestSignedHeadersErrors(t *testing.T) {
	t.Parallel()
	ts := time.Unix(1614265330, 0)
	if h, err := webhook.SignedHeaders("not-a-secret", "dlv-1", "transaction.failed", ts, nil, false); err == nil {
		t.Fatalf("malformed secret: got %v, want error", h)
	}
	if h, err := webhook.SignedHeaders(specSecret, "", "transaction.failed", ts, nil, false); err == nil {
		t.Fatalf("empty delivery id: got %v, want error", h)
	}
}
