package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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

// These tests run the whole program: the API settles sandbox payments and
// River's webhook workers deliver the events to a local receiver.

// createPayment posts a transaction through the API and returns its id.
func createPayment(t testing.TB, s *testserver.Server, key, phone string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"reference": "e2e-" + uuid.NewString()[:12], "amount": 2500, "currency": "XAF",
		"operator": "AIRTEL", "phone_number": phone})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/transactions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create payment: %d %v", resp.StatusCode, out)
	}
	return out["id"].(string)
}

// waitFinal polls GET /v1/transactions/{id} until the status is final and
// returns the API's view of the transaction.
func waitFinal(t testing.TB, s *testserver.Server, key, id string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/transactions/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		dec := json.NewDecoder(resp.Body)
		dec.UseNumber()
		dec.Decode(&out)
		resp.Body.Close()
		if st, _ := out["status"].(string); payment.Status(st).Final() {
			delete(out, "expires_at") // the one API field events do not carry
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction %s still %v after %s", id, out["status"], within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func forTransaction(id string) func(request) bool {
	return func(r request) bool {
		var body struct {
			Data struct{ ID string } `json:"data"`
		}
		json.Unmarshal(r.body, &body)
		return body.Data.ID == id
	}
}

func TestDeliveryThroughServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		phone     string
		status    string
		wantEvent string // "" = no delivery
	}{
		{sandbox.PhoneSuccess, "SUCCESS", "transaction.success"},
		{sandbox.PhoneFailure, "FAILED", "transaction.failed"},
		{sandbox.PhoneNoAnswer, "TIMEOUT", "transaction.timeout"},
		{sandbox.PhoneExpired, "EXPIRED", ""},
	}
	testdb.Each(t, func(t *testing.T, engine string) {
		// 3 s: the scripted payers answer at 2 s, the others settle at expiry.
		s := testserver.Start(t, testserver.Options{DB: engine, PendingTTL: 3 * time.Second})
		rc := newReceiver(t, nil)
		e, err := s.App.Webhooks.CreateEndpoint(context.Background(), s.MerchantID, rc.URL)
		if err != nil {
			t.Fatal(err)
		}
		rc.setSecret(e.Secret)
		for _, tt := range tests {
			t.Run(tt.status, func(t *testing.T) {
				t.Parallel()
				id := createPayment(t, s, s.APIKey, tt.phone)
				tx := waitFinal(t, s, s.APIKey, id, 15*time.Second)
				if tx["status"] != tt.status {
					t.Fatalf("status %v, want %s", tx["status"], tt.status)
				}
				if tt.wantEvent == "" {
					// The outbox writes in the settling transaction, so a
					// final status without a delivery means none will come.
					for _, d := range must(s.App.Webhooks.Deliveries(context.Background(), s.MerchantID, 100)) {
						if d.TransactionID == id {
							t.Fatalf("delivery %s queued for an %s transaction", d.ID, tt.status)
						}
					}
					return
				}
				got := rc.waitFor(t, 1, 10*time.Second, forTransaction(id))[0]
				deliveryID := got.header.Get("X-Service-Delivery-Id")
				sentAt := time.Unix(must(strconv.ParseInt(got.header.Get("Webhook-Timestamp"), 10, 64)), 0)
				if d := time.Since(sentAt); d < -time.Second || d > 30*time.Second {
					t.Errorf("webhook-timestamp %v is not the attempt time", sentAt)
				}
				checkHeaders(t, got, deliveryID, tt.wantEvent, sentAt)
				checkEventBody(t, got.body, tt.wantEvent, tx)
				waitState(t, s.App, s.MerchantID, deliveryID, webhook.StateDelivered)
			})
		}
	})
}

// waitState polls a delivery until it reaches state (the worker records
// the attempt just after the receiver answers).
func waitState(t testing.TB, a *app.App, merchant, id string, state webhook.DeliveryState) *webhook.Delivery {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := a.Webhooks.Delivery(context.Background(), merchant, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.State == state {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %s is %s, want %s", id, d.State, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSlowReceiverDoesNotBlockOthers: one merchant's endpoint hangs on
// several deliveries at once; another merchant's event still arrives in
// seconds, because attempts run on many workers and hold no database
// resource while they wait.
func TestSlowReceiverDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		s := testserver.Start(t, testserver.Options{DB: engine})
		release := make(chan struct{})
		slow := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		t.Cleanup(func() { close(release) }) // runs before the server stops
		fast := newReceiver(t, nil)

		slowMerchant, slowKey := s.MerchantID, s.APIKey
		for i := range 3 { // three endpoints, each hanging
			e, err := s.App.Webhooks.CreateEndpoint(ctx, slowMerchant, fmt.Sprintf("%s/%d", slow.URL, i))
			if err != nil {
				t.Fatal(err)
			}
			slow.setSecret(e.Secret)
		}
		fastMerchant, fastKey := s.NewMerchant(t)
		e, err := s.App.Webhooks.CreateEndpoint(ctx, fastMerchant, fast.URL)
		if err != nil {
			t.Fatal(err)
		}
		fast.setSecret(e.Secret)

		for range 3 {
			createPayment(t, s, slowKey, sandbox.PhoneSuccess)
		}
		slow.waitFor(t, 9, 10*time.Second, nil) // 9 attempts hanging at once
		id := createPayment(t, s, fastKey, sandbox.PhoneSuccess)
		start := time.Now()
		fast.waitFor(t, 1, 8*time.Second, forTransaction(id))
		t.Logf("fast merchant's event arrived %s after creation while 9 attempts hung", time.Since(start).Round(time.Millisecond))
		if n := len(slow.requests()); n != 9 {
			t.Errorf("slow receiver saw %d requests, want 9 (no retry before 1 min)", n)
		}
	})
}

// TestDeliveryAfterCrash kills the process between the state change and the
// first attempt: an app that settles a payment but never serves, closed,
// then a server on the same database, which makes the delivery.
func TestDeliveryAfterCrash(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		dbURL := testdb.URL(t, engine)
		rc := newReceiver(t, nil)

		a, err := app.Open(ctx, app.Config{DatabaseURL: dbURL, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{app: a, clock: testserver.NewClock(time.Now())}
		merchant := f.newMerchant(t)
		f.endpoint(t, merchant, rc)
		tx, err := a.Payments.Initiate(ctx, merchant, payment.CreateRequest{Reference: "crash-1", Amount: 700,
			Currency: "XAF", Operator: "MOOV", PhoneNumber: sandbox.PhoneNoAnswer})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Payments.Settle(ctx, merchant, tx.ID, payment.StatusSuccess, payment.SourceSandbox, "payer confirmed"); err != nil {
			t.Fatal(err)
		}
		d := f.onlyDelivery(t, merchant)
		a.Close() // the "crash": committed, never attempted
		if n := len(rc.requests()); n != 0 || d.State != webhook.StatePending || d.AttemptCount != 0 {
			t.Fatalf("before restart: %d requests, %s, %d attempts", n, d.State, d.AttemptCount)
		}

		s := testserver.Start(t, testserver.Options{DatabaseURL: dbURL})
		got := rc.waitFor(t, 1, 10*time.Second, nil)[0]
		if got.header.Get("X-Service-Delivery-Id") != d.ID || !bytes.Equal(got.body, d.Payload) {
			t.Fatalf("after restart got delivery %s, want %s with the stored bytes", got.header.Get("X-Service-Delivery-Id"), d.ID)
		}
		checkEventBody(t, got.body, "transaction.success", wantData(must(s.App.Payments.Get(ctx, merchant, tx.ID))))
		waitState(t, s.App, merchant, d.ID, webhook.StateDelivered)
	})
}

// TestDisablingEndpointEndsItsWaitingDeliveries: a delivery waiting for its
// retry (the first at 1 min) turns undelivered as soon as its endpoint is
// disabled or deleted, not at its retry time, and is not attempted again. Before, it
// stayed pending until then (up to 2 h before the last retry) and was
// sent if the endpoint was enabled again meanwhile.
func TestDisablingEndpointEndsItsWaitingDeliveries(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		s := testserver.Start(t, testserver.Options{DB: engine})
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		e, err := s.App.Webhooks.CreateEndpoint(ctx, s.MerchantID, rc.URL)
		if err != nil {
			t.Fatal(err)
		}
		createPayment(t, s, s.APIKey, sandbox.PhoneSuccess)
		rc.waitFor(t, 1, 10*time.Second, nil)
		var id string
		for deadline := time.Now().Add(10 * time.Second); id == ""; time.Sleep(20 * time.Millisecond) {
			ds, err := s.App.Webhooks.Deliveries(ctx, s.MerchantID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 1 && ds[0].AttemptCount == 1 && ds[0].NextAttemptAt != nil && !ds[0].Attempts[0].InProgress {
				id = ds[0].ID
			} else if time.Now().After(deadline) {
				t.Fatalf("the first attempt's failure was not recorded: %+v", ds)
			}
		}
		if _, err := s.App.Webhooks.SetEndpointEnabled(ctx, s.MerchantID, e.ID, false); err != nil {
			t.Fatal(err)
		}
		d := waitState(t, s.App, s.MerchantID, id, webhook.StateUndelivered) // within 10 s; its retry was 1 min away
		if d.AttemptCount != 1 || len(rc.requests()) != 1 {
			t.Errorf("after disabling: %d attempts, %d requests; want the first alone", d.AttemptCount, len(rc.requests()))
		}
		if _, err := s.App.Webhooks.SetEndpointEnabled(ctx, s.MerchantID, e.ID, true); err != nil {
			t.Fatal(err)
		}
		if d, _ := s.App.Webhooks.Delivery(ctx, s.MerchantID, id); d.State != webhook.StateUndelivered {
			t.Errorf("enabled again: the delivery is %s, want undelivered until re-sent", d.State)
		}

		// Deleting one does the same.
		gone, err := s.App.Webhooks.CreateEndpoint(ctx, s.MerchantID, rc.URL+"/gone")
		if err != nil {
			t.Fatal(err)
		}
		createPayment(t, s, s.APIKey, sandbox.PhoneSuccess)
		var goneID string
		for deadline := time.Now().Add(10 * time.Second); goneID == ""; time.Sleep(20 * time.Millisecond) {
			ds, _ := s.App.Webhooks.Deliveries(ctx, s.MerchantID, 0)
			for _, d := range ds {
				if d.EndpointID == gone.ID && d.AttemptCount == 1 && d.NextAttemptAt != nil && !d.Attempts[0].InProgress {
					goneID = d.ID
				}
			}
			if goneID == "" && time.Now().After(deadline) {
				t.Fatal("the deleted endpoint's first attempt was not recorded")
			}
		}
		if err := s.App.Webhooks.DeleteEndpoint(ctx, s.MerchantID, gone.ID); err != nil {
			t.Fatal(err)
		}
		waitState(t, s.App, s.MerchantID, goneID, webhook.StateUndelivered)
	})
}
