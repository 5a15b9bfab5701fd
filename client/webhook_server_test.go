package client_test

// The webhook receiver helpers are tested here against real deliveries: the
// in-process momopay server settles sandbox payments and signs and POSTs
// their events to a WebhookHandler on a loopback port, on each database
// engine. No event is built by hand, so a disagreement between what the
// server sends and what VerifyWebhook expects fails here.

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/client"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
	"github.com/momopay/momopay/internal/webhook"
)

// webhookWait bounds how long a test waits for the server to settle a
// sandbox payment (about 2 s) and deliver or attempt its event.
const webhookWait = 15 * time.Second

// Sandbox payers whose outcome the tests rely on (internal/operator/sandbox).
const (
	webhookPhoneSuccess = "+23560000001" // confirms after ~2 s
	webhookPhoneFailure = "+23560000002" // refuses after ~2 s
)

func TestWebhooksFromServer(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		t.Run("DeliveredVerifiedDeduplicated", func(t *testing.T) {
			t.Parallel()
			testWebhooksDelivered(t, s)
		})
		t.Run("WrongSecretIsRetried", func(t *testing.T) {
			t.Parallel()
			testWebhookWrongSecret(t, s)
		})
		t.Run("PreviousSecretAfterRotation", func(t *testing.T) {
			t.Parallel()
			// A merchant of its own: the others count their deliveries.
			testWebhookAfterRotation(t, testserver.Start(t, testserver.Options{DB: engine}))
		})
	})
}

// capturedRequest is one POST as the receiver got it, and its answer.
type capturedRequest struct {
	header http.Header
	body   []byte
	status int
}

// webhookReceiver is an httptest server serving a WebhookHandler at
// /webhook. It keeps every request with the status the handler answered, and
// every event the merchant's function was called with. Its address exists
// before it starts, so the endpoint can be registered first and the handler
// built with the secret that registration returns.
type webhookReceiver struct {
	srv     *httptest.Server
	handler http.Handler // set by start, before the first request

	mu       sync.Mutex
	requests []capturedRequest
	events   []*client.Event
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	r := &webhookReceiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("/webhook", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r.handler.ServeHTTP(rec, req)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.requests = append(r.requests, capturedRequest{header: req.Header.Clone(), body: body, status: rec.status})
	})
	r.srv = httptest.NewUnstartedServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

// start serves deliveries with a WebhookHandler for secret, deduplicating
// through a fresh MemoryDeliveryStore.
func (r *webhookReceiver) start(secret string) {
	r.handler = client.WebhookHandler(secret, client.NewMemoryDeliveryStore(),
		func(_ context.Context, ev *client.Event) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events = append(r.events, ev)
			return nil
		})
	r.srv.Start()
}

// url is what to register with the service.
func (r *webhookReceiver) url() string {
	return "http://" + r.srv.Listener.Addr().String() + "/webhook"
}

func (r *webhookReceiver) snapshot() ([]capturedRequest, []*client.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]capturedRequest(nil), r.requests...), append([]*client.Event(nil), r.events...)
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

// waitFor polls cond every 50 ms until it holds or webhookWait passes, then
// fails the test with what describe says about the last state seen.
func waitFor(t *testing.T, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(webhookWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s; %s", what, webhookWait, describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func webhookPayment(phone string) client.CreateTransactionParams {
	return client.CreateTransactionParams{Reference: "wh-" + rand.Text(), Amount: 3100,
		Operator: client.OperatorMoov, PhoneNumber: phone, Description: "webhook test"}
}

// eventsByName indexes events by their event name; a name seen twice is an
// error, since each delivery must reach fn once.
func eventsByName(t *testing.T, events []*client.Event) map[string]*client.Event {
	t.Helper()
	out := map[string]*client.Event{}
	for _, ev := range events {
		if _, dup := out[ev.Event]; dup {
			t.Errorf("fn was called twice for %s (delivery %s)", ev.Event, ev.DeliveryID)
		}
		out[ev.Event] = ev
	}
	return out
}

// testWebhooksDelivered pays once and is refused once, and checks that the
// receiver gets both events verified, typed as the API shows the
// transaction, each once even when a delivery arrives again.
func testWebhooksDelivered(t *testing.T, s *testserver.Server) {
	ctx := context.Background()
	recv := newWebhookReceiver(t)
	ep, err := s.App.Webhooks.CreateEndpoint(ctx, s.MerchantID, recv.url())
	if err != nil {
		t.Fatalf("CreateEndpoint(%s): %v", recv.url(), err)
	}
	recv.start(ep.Secret)

	c := client.New(s.APIKey, client.WithBaseURL(s.URL))
	paid, err := c.CreateTransaction(ctx, webhookPayment(webhookPhoneSuccess))
	if err != nil {
		t.Fatalf("create the payment that succeeds: %v", err)
	}
	refused, err := c.CreateTransaction(ctx, webhookPayment(webhookPhoneFailure))
	if err != nil {
		t.Fatalf("create the payment that fails: %v", err)
	}

	waitFor(t, "transaction.success and transaction.failed events", func() bool {
		_, evs := recv.snapshot()
		seen := map[string]bool{}
		for _, ev := range evs {
			seen[ev.Event] = true
		}
		return seen[client.EventTransactionSuccess] && seen[client.EventTransactionFailed]
	}, func() string { return recv.describe() })

	_, evs := recv.snapshot()
	byName := eventsByName(t, evs)
	if len(evs) != 2 {
		t.Errorf("fn got %d events, want exactly the success and the failure: %s", len(evs), recv.describe())
	}
	want := []struct {
		event  string
		tx     *client.Transaction
		status client.Status
	}{
		{client.EventTransactionSuccess, paid, client.StatusSuccess},
		{client.EventTransactionFailed, refused, client.StatusFailed},
	}
	for _, w := range want {
		ev := byName[w.event]
		got, err := c.GetTransaction(ctx, w.tx.ID)
		if err != nil {
			t.Fatalf("GetTransaction(%s): %v", w.tx.ID, err)
		}
		if got.Status != w.status {
			t.Errorf("%s: transaction %s is %s, want %s", w.event, got.ID, got.Status, w.status)
		}
		checkEventMatches(t, ev, got)
	}
	if byName[client.EventTransactionSuccess].DeliveryID == byName[client.EventTransactionFailed].DeliveryID {
		t.Errorf("two deliveries share the id %s", byName[client.EventTransactionSuccess].DeliveryID)
	}

	// The server records both deliveries as delivered at the first attempt,
	// under the ids and with the exact bytes the receiver got.
	var deliveries []webhook.Delivery
	waitFor(t, "two delivered deliveries recorded", func() bool {
		ds, err := s.App.Webhooks.Deliveries(ctx, s.MerchantID, 0)
		if err != nil {
			t.Fatalf("Deliveries: %v", err)
		}
		deliveries = ds
		for _, d := range ds {
			if d.State != webhook.StateDelivered {
				return false
			}
		}
		return len(ds) == 2
	}, func() string { return fmt.Sprintf("deliveries: %+v", deliveries) })
	reqs, _ := recv.snapshot()
	for _, d := range deliveries {
		ev := byName[d.Event]
		if ev == nil || d.ID != ev.DeliveryID || d.TransactionID != ev.Data.ID {
			t.Errorf("delivery %s (%s of %s) does not match the event fn got: %+v", d.ID, d.Event, d.TransactionID, ev)
			continue
		}
		if d.AttemptCount != 1 || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != http.StatusOK {
			t.Errorf("delivery %s: %d attempts %+v, want one answered 200", d.ID, d.AttemptCount, d.Attempts)
		}
		first := findRequest(reqs, d.ID)
		if first == nil {
			t.Fatalf("the receiver has no request for delivery %s: %s", d.ID, recv.describe())
		}
		if !bytes.Equal(first.body, d.Payload) {
			t.Errorf("delivery %s: the receiver got\n%s\nthe server stored\n%s", d.ID, first.body, d.Payload)
		}
	}

	// A delivery that arrives again, byte for byte with the same headers
	// (a retry after a lost answer, a replay), is answered 2xx so the
	// service stops sending, but fn is not called again.
	for _, w := range want {
		id := byName[w.event].DeliveryID
		first := findRequest(reqs, id)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, recv.url(), bytes.NewReader(first.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = first.header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("replay delivery %s: %v", id, err)
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			t.Errorf("replayed delivery %s answered %d, want 2xx", id, resp.StatusCode)
		}
	}
	reqs, evs = recv.snapshot()
	if len(reqs) != 4 {
		t.Errorf("the receiver saw %d requests, want the 2 deliveries and the 2 replays: %s", len(reqs), recv.describe())
	}
	if len(evs) != 2 {
		t.Errorf("after the replays fn has been called %d times, want 2 (once per delivery): %s", len(evs), recv.describe())
	}
	eventsByName(t, evs) // reports an event fn got twice
}

// checkEventMatches compares an event's data with the transaction the API
// returns for it.
func checkEventMatches(t *testing.T, ev *client.Event, tx *client.Transaction) {
	t.Helper()
	if ev == nil {
		t.Errorf("no event for transaction %s", tx.ID)
		return
	}
	d := ev.Data
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"ID", d.ID, tx.ID},
		{"Reference", d.Reference, tx.Reference},
		{"InternalRef", d.InternalRef, tx.InternalRef},
		{"Amount", d.Amount, tx.Amount},
		{"Currency", d.Currency, tx.Currency},
		{"Operator", d.Operator, tx.Operator},
		{"PhoneNumber", d.PhoneNumber, tx.PhoneNumber},
		{"Status", d.Status, tx.Status},
	} {
		if f.got != f.want {
			t.Errorf("%s event: Data.%s = %v, the API says %v", ev.Event, f.name, f.got, f.want)
		}
	}
	if d.Description == nil || tx.Description == nil || *d.Description != *tx.Description {
		t.Errorf("%s event: Data.Description = %v, the API says %v", ev.Event, strPtr(d.Description), strPtr(tx.Description))
	}
	if d.CreatedAt.IsZero() || !d.CreatedAt.Equal(tx.CreatedAt) {
		t.Errorf("%s event: Data.CreatedAt = %s, the API says %s", ev.Event, d.CreatedAt, tx.CreatedAt)
	}
	if d.UpdatedAt.IsZero() || !d.UpdatedAt.Equal(tx.UpdatedAt) {
		t.Errorf("%s event: Data.UpdatedAt = %s, the API says %s", ev.Event, d.UpdatedAt, tx.UpdatedAt)
	}
	if !ev.Timestamp.Equal(tx.UpdatedAt) {
		t.Errorf("%s event: Timestamp = %s, want the settlement time %s", ev.Event, ev.Timestamp, tx.UpdatedAt)
	}
	if d.ConfirmedAt != nil {
		t.Errorf("%s event: Data.ConfirmedAt = %s, want it absent outside the test event", ev.Event, d.ConfirmedAt)
	}
	if ev.DeliveryID == "" {
		t.Errorf("%s event has no DeliveryID", ev.Event)
	}
	if ev.Test {
		t.Errorf("%s event for a real payment has Test = true", ev.Event)
	}
}

func strPtr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}

// findRequest returns the first request of a delivery, or nil.
func findRequest(reqs []capturedRequest, deliveryID string) *capturedRequest {
	for i := range reqs {
		if reqs[i].header.Get("X-Service-Delivery-Id") == deliveryID {
			return &reqs[i]
		}
	}
	return nil
}

// describe summarises what the receiver saw, for failure messages.
func (r *webhookReceiver) describe() string {
	reqs, evs := r.snapshot()
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests:", len(reqs))
	for _, q := range reqs {
		fmt.Fprintf(&b, " [%s %s -> %d]", q.header.Get("X-Service-Event"), q.header.Get("X-Service-Delivery-Id"), q.status)
	}
	fmt.Fprintf(&b, "; %d events:", len(evs))
	for _, ev := range evs {
		fmt.Fprintf(&b, " [%s %s]", ev.Event, ev.DeliveryID)
	}
	return b.String()
}

// testWebhookWrongSecret gives the receiver a secret other than its
// endpoint's: the real delivery must be refused with 401, and the server must
// record that attempt as failed and keep the delivery pending for its retry.
func testWebhookWrongSecret(t *testing.T, s *testserver.Server) {
	ctx := context.Background()
	merchantID, apiKey := s.NewMerchant(t) // its own merchant: no endpoint of the other test
	recv := newWebhookReceiver(t)
	ep, err := s.App.Webhooks.CreateEndpoint(ctx, merchantID, recv.url())
	if err != nil {
		t.Fatalf("CreateEndpoint(%s): %v", recv.url(), err)
	}
	wrong, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	recv.start(wrong)

	c := client.New(apiKey, client.WithBaseURL(s.URL))
	tx, err := c.CreateTransaction(ctx, webhookPayment(webhookPhoneSuccess))
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	var deliveries []webhook.Delivery
	waitFor(t, "failed attempt recorded by the server", func() bool {
		ds, err := s.App.Webhooks.Deliveries(ctx, merchantID, 0)
		if err != nil {
			t.Fatalf("Deliveries: %v", err)
		}
		deliveries = ds
		reqs, _ := recv.snapshot()
		// An attempt is written down before it is sent and completed after
		// the answer: wait for the completed one.
		return len(ds) > 0 && len(ds[0].Attempts) > 0 && !ds[0].Attempts[0].InProgress && len(reqs) > 0
	}, func() string { return fmt.Sprintf("deliveries: %+v; receiver: %s", deliveries, recv.describe()) })

	if len(deliveries) != 1 {
		t.Fatalf("%d deliveries, want 1: %+v", len(deliveries), deliveries)
	}
	d := deliveries[0]
	if d.Event != client.EventTransactionSuccess || d.TransactionID != tx.ID || d.EndpointID != ep.ID {
		t.Errorf("delivery is %s of %s to %s, want %s of %s to %s",
			d.Event, d.TransactionID, d.EndpointID, client.EventTransactionSuccess, tx.ID, ep.ID)
	}
	if d.State != webhook.StatePending || d.AttemptCount != 1 || len(d.Attempts) != 1 {
		t.Fatalf("delivery is %s after %d attempts %+v, want pending after 1", d.State, d.AttemptCount, d.Attempts)
	}
	a := d.Attempts[0]
	if a.StatusCode != http.StatusUnauthorized || a.Succeeded || a.Manual || a.Number != 1 {
		t.Errorf("attempt = %+v, want automatic attempt 1 answered 401, failed", a)
	}
	// The contract's first retry comes a minute after the first attempt.
	if d.NextAttemptAt == nil {
		t.Errorf("pending delivery has no next attempt time")
	} else if wait := d.NextAttemptAt.Sub(a.AttemptedAt); wait < time.Minute || wait > time.Minute+webhookWait {
		t.Errorf("next attempt %s after the failed one, want about 1 minute", wait)
	}

	reqs, evs := recv.snapshot()
	if len(evs) != 0 {
		t.Errorf("fn was called for a delivery that does not verify: %s", recv.describe())
	}
	if len(reqs) != 1 || reqs[0].status != http.StatusUnauthorized {
		t.Fatalf("receiver: %s, want one request answered 401", recv.describe())
	}
	// It was refused for the secret alone: the same bytes verify with the
	// endpoint's real secret.
	if _, err := client.VerifyWebhook(ep.Secret, reqs[0].body, reqs[0].header); err != nil {
		t.Errorf("the refused delivery does not verify with the endpoint's secret either: %v", err)
	}
	if got := reqs[0].header.Get("X-Service-Delivery-Id"); got != d.ID {
		t.Errorf("X-Service-Delivery-Id = %q, want the recorded delivery %s", got, d.ID)
	}
}

// testWebhookAfterRotation: a receiver still running with the previous
// secret, after the merchant rotated it, keeps verifying deliveries (the
// 24 hours webhook-signature carries both); before, the client also
// required X-Service-Signature, made with the new secret only, and refused
// every delivery until the new secret was deployed.
func testWebhookAfterRotation(t *testing.T, s *testserver.Server) {
	ctx := context.Background()
	recv := newWebhookReceiver(t)
	ep, err := s.App.Webhooks.CreateEndpoint(ctx, s.MerchantID, recv.url())
	if err != nil {
		t.Fatal(err)
	}
	recv.start(ep.Secret) // the previous secret, from now on
	rotated, err := s.App.Webhooks.RotateSecret(ctx, s.MerchantID, ep.ID, "rotate-"+rand.Text())
	if err != nil || rotated.Secret == "" || rotated.Secret == ep.Secret {
		t.Fatalf("rotate: %+v, %v", rotated, err)
	}
	c := client.New(s.APIKey, client.WithBaseURL(s.URL))
	paid, err := c.CreateTransaction(ctx, webhookPayment(webhookPhoneSuccess))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery verified with the previous secret", func() bool {
		_, evs := recv.snapshot()
		return len(evs) == 1
	}, func() string { return recv.describe() })
	reqs, evs := recv.snapshot()
	if evs[0].Data.ID != paid.ID || reqs[0].status != http.StatusOK {
		t.Errorf("event %+v answered %d", evs[0].Data, reqs[0].status)
	}
	// The same delivery verifies with the new secret; X-Service-Signature
	// is made with that one alone.
	if _, err := client.VerifyWebhook(rotated.Secret, reqs[0].body, reqs[0].header); err != nil {
		t.Errorf("with the new secret: %v", err)
	}
	if _, err := client.VerifyWebhook("whsec_"+strings.Repeat("QUJD", 11)+"QQ==", reqs[0].body, reqs[0].header); err == nil {
		t.Error("verified with an unrelated secret")
	}
}
