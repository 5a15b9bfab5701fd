package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/operator/sandbox"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
	"github.com/momopay/momopay/internal/webhook"
)

// fixture is a wired momopay that is opened but never served: no worker
// runs, so the test makes every attempt itself, on a fake clock.
type fixture struct {
	app      *app.App
	clock    *testserver.Clock
	merchant string
	dbURL    string
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// eachEngine runs fn, in parallel, on a fresh fixture of each engine.
func eachEngine(t *testing.T, fn func(t *testing.T, f *fixture)) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, engine string) {
		fn(t, setup(t, engine))
	})
}

func setup(t testing.TB, engine string) *fixture {
	t.Helper()
	c := testserver.NewClock(time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC))
	dbURL := testdb.URL(t, engine)
	a, err := app.Open(context.Background(), app.Config{DatabaseURL: dbURL, Now: c.Now, Logger: quietLog})
	if err != nil {
		t.Fatalf("open app: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	f := &fixture{app: a, clock: c, dbURL: dbURL}
	f.merchant = f.newMerchant(t)
	return f
}

// newMerchant inserts a merchant row directly: Merchants.Create spends half
// a second on bcrypt under -race, and no test here logs in.
func (f *fixture) newMerchant(t testing.TB) string {
	t.Helper()
	id := uuid.NewString()
	_, err := f.app.DB.Exec(`INSERT INTO merchants (id, name, email, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
		id, "Webhook Test", "wh-"+strings.ToLower(rand.Text()[:10])+"@example.com", "-", f.app.DB.Time(f.clock.Now()))
	if err != nil {
		t.Fatalf("create merchant: %v", err)
	}
	return id
}

// service returns another webhook service on the fixture's database, e.g.
// in live mode or with a short timeout.
func (f *fixture) service(live bool, timeout time.Duration) *webhook.Service {
	return webhook.NewService(webhook.Config{DB: f.app.DB, Live: live, Timeout: timeout, Now: f.clock.Now, Logger: quietLog})
}

func (f *fixture) endpoint(t testing.TB, merchant string, r *receiver) *webhook.Endpoint {
	t.Helper()
	return f.endpointAt(t, merchant, r, "")
}

// endpointAt registers r's URL with path appended: one receiver serves
// several endpoints of one merchant under distinct URLs (one URL cannot be
// registered twice).
func (f *fixture) endpointAt(t testing.TB, merchant string, r *receiver, path string) *webhook.Endpoint {
	t.Helper()
	e, err := f.app.Webhooks.CreateEndpoint(context.Background(), merchant, r.URL+path)
	if err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	r.setSecret(e.Secret)
	return e
}

// settle creates a payment for merchant and settles it into to through the
// real payment service, whose store calls the outbox.
func (f *fixture) settle(t testing.TB, merchant string, to payment.Status) *payment.Transaction {
	t.Helper()
	ctx := context.Background()
	desc := "Order <42> & co"
	tx, err := f.app.Payments.Initiate(ctx, merchant, payment.CreateRequest{
		Reference: "ord-" + uuid.NewString()[:8], Amount: 1500, Currency: "XAF", Operator: "MOOV",
		PhoneNumber: sandbox.PhoneNoAnswer, Description: &desc,
	})
	if err != nil {
		t.Fatalf("initiate: %v", err)
	}
	f.clock.Advance(20 * time.Second)
	if to == payment.StatusExpired { // never before expires_at
		f.clock.Advance(tx.ExpiresAt.Sub(f.clock.Now()))
	}
	got, changed, err := f.app.Payments.Settle(ctx, merchant, tx.ID, to, payment.SourceSandbox, "test")
	if err != nil || !changed {
		t.Fatalf("settle into %s: changed=%v err=%v", to, changed, err)
	}
	return got
}

// onlyDelivery returns the one delivery of merchant, failing otherwise.
func (f *fixture) onlyDelivery(t testing.TB, merchant string) webhook.Delivery {
	t.Helper()
	ds, err := f.app.Webhooks.Deliveries(context.Background(), merchant, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		t.Fatalf("merchant has %d deliveries, want 1", len(ds))
	}
	return ds[0]
}

// request is what a receiver saw, with the signatures already checked
// independently of the code under test.
type request struct {
	header        http.Header
	body          []byte
	serviceSigOK  bool
	standardSigOK bool
}

// receiver is a merchant's endpoint on loopback. It verifies both
// signatures over the raw bytes it received and records every request.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	reqs   []request
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

// newReceiver starts a receiver; answer writes the reply to the n-th
// request (1-based); nil answers 200 "ok".
func newReceiver(t testing.TB, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

// statuses answers the n-th request with codes[n-1] (the last one repeats)
// and a body longer than the excerpt limit.
func statuses(codes ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(codes[min(n, len(codes))-1])
		// 3001 bytes: the 1 KiB cut falls inside an "é".
		io.WriteString(w, "a"+strings.Repeat("é", 1500))
	}
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = s
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	secret := rc.secret
	req := request{header: r.Header.Clone(), body: body,
		serviceSigOK:  r.Header.Get("X-Service-Signature") == serviceSignature(secret, body),
		standardSigOK: standardSignatureOK(secret, r.Header, body)}
	rc.reqs = append(rc.reqs, req)
	n := len(rc.reqs)
	rc.mu.Unlock()
	if rc.answer == nil {
		io.WriteString(w, "ok")
		return
	}
	rc.answer(n, w, r)
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.reqs)
}

// waitFor polls until match has seen want requests or the deadline passes.
func (rc *receiver) waitFor(t testing.TB, want int, within time.Duration, match func(request) bool) []request {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var got []request
		for _, r := range rc.requests() {
			if match == nil || match(r) {
				got = append(got, r)
			}
		}
		if len(got) >= want || time.Now().After(deadline) {
			if len(got) != want {
				t.Fatalf("receiver got %d matching requests within %s, want %d", len(got), within, want)
			}
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serviceSignature is the contract's X-Service-Signature (section 6.4),
// computed here from the contract's words, not with the package's code.
func serviceSignature(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// standardSignatureOK checks webhook-signature as a stock Standard Webhooks
// verifier does: HMAC-SHA256 of "id.timestamp.body" keyed with the base64
// part of the secret.
func standardSignatureOK(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(h.Get("webhook-signature")), []byte(want))
}

// checkHeaders checks every header of one delivery request (contract 6.3
// plus Standard Webhooks). event "" means the test event.
func checkHeaders(t testing.TB, r request, deliveryID, event string, sentAt time.Time) {
	t.Helper()
	h := r.header
	want := map[string]string{
		"Content-Type":          "application/json",
		"User-Agent":            "Service-Webhook/1.0",
		"X-Service-Delivery-Id": deliveryID,
		"Webhook-Id":            deliveryID,
		"Webhook-Timestamp":     strconv.FormatInt(sentAt.Unix(), 10),
		"X-Service-Event":       event,
		"X-Service-Test":        "",
		"Accept-Encoding":       "", // only the documented headers
	}
	if event == "" {
		want["X-Service-Test"] = "true"
	}
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("header %s = %q, want %q", name, got, v)
		}
	}
	if _, err := uuid.Parse(h.Get("X-Service-Delivery-Id")); err != nil {
		t.Errorf("X-Service-Delivery-Id %q is not a UUID", h.Get("X-Service-Delivery-Id"))
	}
	if !strings.HasPrefix(h.Get("X-Service-Signature"), "sha256=") || !r.serviceSigOK {
		t.Errorf("X-Service-Signature %q does not verify over the raw body", h.Get("X-Service-Signature"))
	}
	if !strings.HasPrefix(h.Get("Webhook-Signature"), "v1,") || !r.standardSigOK {
		t.Errorf("webhook-signature %q does not verify", h.Get("Webhook-Signature"))
	}
}

// decodeEvent decodes a body, checking it has exactly event, data and
// timestamp, and data exactly dataFields.
func decodeEvent(t testing.TB, body []byte, dataFields ...string) (event string, data map[string]any, timestamp string) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	if got := slices.Sorted(maps.Keys(top)); !slices.Equal(got, []string{"data", "event", "timestamp"}) {
		t.Errorf("top-level fields %v, want [data event timestamp]", got)
	}
	json.Unmarshal(top["event"], &event)
	json.Unmarshal(top["timestamp"], &timestamp)
	dec := json.NewDecoder(strings.NewReader(string(top["data"])))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		t.Fatalf("data: %v", err)
	}
	if got, want := slices.Sorted(maps.Keys(data)), slices.Sorted(slices.Values(dataFields)); !slices.Equal(got, want) {
		t.Errorf("data fields %v, want exactly %v", got, want)
	}
	return event, data, timestamp
}

// eventFields is the data of a production event (contract 6.2).
var eventFields = []string{"id", "reference", "internal_ref", "amount", "currency", "operator", "phone_number",
	"description", "status", "created_at", "updated_at"}

// checkEventBody checks a production event against the transaction: every
// field, in the API's formats.
func checkEventBody(t testing.TB, body []byte, event string, want map[string]any) {
	t.Helper()
	gotEvent, data, ts := decodeEvent(t, body, eventFields...)
	if gotEvent != event {
		t.Errorf("event = %q, want %q", gotEvent, event)
	}
	for k, v := range want {
		if got := data[k]; stringOf(got) != stringOf(v) {
			t.Errorf("data.%s = %v, want %v", k, got, v)
		}
	}
	if ts != want["updated_at"] {
		t.Errorf("timestamp = %q, want updated_at %v", ts, want["updated_at"])
	}
	for _, k := range []string{"created_at", "updated_at"} {
		s, _ := data[k].(string)
		if p, err := time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") || p.Location() != time.UTC {
			t.Errorf("data.%s = %q is not RFC 3339 UTC", k, s)
		}
	}
}

func stringOf(v any) string {
	if v == nil {
		return "<null>"
	}
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// wireTime is the one wire format of timestamps: RFC 3339 UTC with exactly
// six fractional digits, written out here rather than taken from the
// package under test.
const wireTime = "2006-01-02T15:04:05.000000Z"

// wantData is the expected data of t's event, formatted as the contract's
// wire format independently of the package.
func wantData(t *payment.Transaction) map[string]any {
	var desc any
	if t.Description != nil {
		desc = *t.Description
	}
	return map[string]any{
		"id": t.ID, "reference": t.Reference, "internal_ref": t.InternalRef, "amount": t.Amount,
		"currency": "XAF", "operator": string(t.Operator), "phone_number": t.PhoneNumber, "description": desc,
		"status": string(t.Status), "created_at": t.CreatedAt.UTC().Format(wireTime),
		"updated_at": t.UpdatedAt.UTC().Format(wireTime),
	}
}

// code returns the payment error code of err.
func code(err error) string { return payment.ErrorCode(err) }
