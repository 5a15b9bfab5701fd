package webhook_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/webhook"
)

// sinceFirst is the contract's table 6.5, "total since the first send".
var sinceFirst = []time.Duration{0, time.Minute, 6 * time.Minute, 36 * time.Minute, 2*time.Hour + 36*time.Minute}

// TestSchedule walks whole delivery schedules on a fake clock by calling
// Attempt as the River worker does, snoozing for whatever it returns.
func TestSchedule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		answers   []int           // the receiver's status per attempt
		wantWaits []time.Duration // what each Attempt returns
		wantState webhook.DeliveryState
	}{
		{"delivered at once", []int{200}, []time.Duration{0}, webhook.StateDelivered},
		{"204 counts as delivered", []int{204}, []time.Duration{0}, webhook.StateDelivered},
		{"delivered on the third attempt", []int{500, 302, 202}, []time.Duration{time.Minute, 5 * time.Minute, 0}, webhook.StateDelivered},
		{"delivered on the last attempt", []int{500, 500, 500, 500, 200},
			[]time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 0}, webhook.StateDelivered},
		{"undelivered after five failures", []int{500, 404, 503, 301, 400},
			[]time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 0}, webhook.StateUndelivered},
	}
	for _, engine := range testdb.Engines {
		for _, tt := range tests {
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := setup(t, engine)
				rc := newReceiver(t, statuses(append(tt.answers, 200)...))
				f.endpoint(t, f.merchant, rc)
				tx := f.settle(t, f.merchant, payment.StatusSuccess)
				d := f.onlyDelivery(t, f.merchant)
				if d.State != webhook.StatePending || d.AttemptCount != 0 || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(tx.UpdatedAt) {
					t.Fatalf("new delivery: state %s, %d attempts, next %v; want pending, 0, %v", d.State, d.AttemptCount, d.NextAttemptAt, tx.UpdatedAt)
				}
				checkQueue(t, f, 1, 0) // due at once
				t0 := f.clock.Now()

				for i, want := range tt.wantWaits {
					wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID)
					if err != nil || wait != want {
						t.Fatalf("attempt %d: wait %v, err %v; want %v", i+1, wait, err, want)
					}
					if got := len(rc.requests()); got != i+1 {
						t.Fatalf("after attempt %d the receiver saw %d requests", i+1, got)
					}
					if wait == 0 {
						break
					}
					// A run before the attempt is due (River early, or a
					// duplicate job) sends nothing and says how long is left.
					f.clock.Advance(wait - 10*time.Second)
					if early, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID); err != nil || early != 10*time.Second {
						t.Fatalf("early run after attempt %d: wait %v, err %v; want 10s", i+1, early, err)
					}
					f.clock.Advance(10 * time.Second)
				}
				// Finished: further runs return 0 without sending.
				f.clock.Advance(3 * time.Hour)
				if wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID); wait != 0 || err != nil {
					t.Fatalf("run after the end: wait %v, err %v; want 0, nil", wait, err)
				}
				reqs := rc.requests()
				if len(reqs) != len(tt.wantWaits) {
					t.Fatalf("receiver saw %d requests, want %d", len(reqs), len(tt.wantWaits))
				}

				got, err := f.app.Webhooks.Delivery(ctx, f.merchant, d.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.State != tt.wantState || got.AttemptCount != len(tt.wantWaits) || got.NextAttemptAt != nil {
					t.Fatalf("delivery: state %s, %d attempts, next %v; want %s, %d, none", got.State, got.AttemptCount, got.NextAttemptAt, tt.wantState, len(tt.wantWaits))
				}
				for i, a := range got.Attempts {
					at := t0.Add(sinceFirst[i])
					if a.Number != i+1 || a.Manual || !a.AttemptedAt.Equal(at) || a.StatusCode != tt.answers[i] || a.LatencyMS < 0 {
						t.Errorf("attempt %d = %+v; want number %d, automatic, at %v, status %d", i+1, a, i+1, at, tt.answers[i])
					}
					if a.Succeeded != (tt.answers[i] < 300) {
						t.Errorf("attempt %d: succeeded = %v for status %d", i+1, a.Succeeded, a.StatusCode)
					}
					wantExcerpt := "a" + strings.Repeat("é", 511)
					if a.StatusCode == http.StatusNoContent {
						wantExcerpt = "" // a 204 has no body
					}
					if a.ResponseExcerpt != wantExcerpt {
						t.Errorf("attempt %d: excerpt of %d bytes, want the first 1 KiB of the answer cut at a character", i+1, len(a.ResponseExcerpt))
					}
					if isRedirect := a.StatusCode/100 == 3; isRedirect != strings.Contains(a.Error, "redirect") {
						t.Errorf("attempt %d: status %d with error %q", i+1, a.StatusCode, a.Error)
					}
					checkHeaders(t, reqs[i], d.ID, "transaction.success", at)
					if !bytes.Equal(reqs[i].body, reqs[0].body) {
						t.Errorf("attempt %d sent different bytes than attempt 1", i+1)
					}
				}
				checkEventBody(t, reqs[0].body, "transaction.success", wantData(tx))
				if !bytes.Equal(reqs[0].body, got.Payload) {
					t.Errorf("sent body differs from the stored payload")
				}

				// Manual re-send: only of an undelivered delivery.
				f.clock.Advance(time.Hour)
				a, err := f.app.Webhooks.Resend(ctx, f.merchant, d.ID)
				if tt.wantState != webhook.StateUndelivered {
					if code(err) != payment.EUNPROCESSABLE || a != nil {
						t.Fatalf("re-send of a %s delivery: %v, %v; want EUNPROCESSABLE", tt.wantState, a, err)
					}
					return
				}
				if err != nil || !a.Succeeded || !a.Manual || a.Number != 6 || a.StatusCode != 200 || !a.AttemptedAt.Equal(f.clock.Now()) {
					t.Fatalf("re-send = %+v, %v; want manual attempt 6, 200, now", a, err)
				}
				reqs = rc.requests()
				if len(reqs) != 6 || !bytes.Equal(reqs[5].body, reqs[0].body) {
					t.Fatalf("re-send: %d requests, same bytes %v", len(reqs), len(reqs) == 6 && bytes.Equal(reqs[5].body, reqs[0].body))
				}
				checkHeaders(t, reqs[5], d.ID, "transaction.success", f.clock.Now())
				got, _ = f.app.Webhooks.Delivery(ctx, f.merchant, d.ID)
				if got.State != webhook.StateDelivered || got.AttemptCount != 6 || len(got.Attempts) != 6 || !got.Attempts[5].Manual {
					t.Fatalf("after re-send: %s, %d attempts, history %d", got.State, got.AttemptCount, len(got.Attempts))
				}
				if _, err := f.app.Webhooks.Resend(ctx, f.merchant, d.ID); code(err) != payment.EUNPROCESSABLE {
					t.Fatalf("second re-send of a delivered delivery: %v, want EUNPROCESSABLE", err)
				}
				checkQueue(t, f, 0, 0) // re-sends queue nothing
			})
		}
	}
}

// checkQueue checks how many deliveries wait for the dispatcher on the
// fixture's clock: due now, and waiting for a later attempt.
func checkQueue(t testing.TB, f *fixture, due, later int64) {
	t.Helper()
	q, err := f.app.Webhooks.QueueStats(context.Background(), f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if q.ByState["available"] != due || q.ByState["scheduled"] != later || q.ByState["running"] != 0 {
		t.Fatalf("webhook queue %v; want %d due and %d later", q.ByState, due, later)
	}
	if due > 0 && q.OldestDue < 0 || due == 0 && q.OldestDue != 0 {
		t.Fatalf("oldest due delivery waited %v", q.OldestDue)
	}
}

// TestTestEvent sends the test event: once, synchronously, never retried.
func TestTestEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
	}{
		{"receiver accepts", http.StatusOK},
		{"receiver refuses", http.StatusInternalServerError},
		{"receiver redirects", http.StatusFound},
	}
	for _, engine := range testdb.Engines {
		for _, tt := range tests {
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := setup(t, engine)
				rc := newReceiver(t, statuses(tt.status))
				e := f.endpoint(t, f.merchant, rc)
				now := f.clock.Now()
				res, err := f.app.Webhooks.Test(ctx, f.merchant, e.ID)
				if err != nil {
					t.Fatal(err)
				}
				if res.Succeeded != (tt.status == 200) || res.StatusCode != tt.status || !res.AttemptedAt.Equal(now) || res.Number != 1 {
					t.Fatalf("result %+v; want status %d at %v", res, tt.status, now)
				}
				reqs := rc.requests()
				if len(reqs) != 1 {
					t.Fatalf("receiver saw %d requests, want 1", len(reqs))
				}
				checkHeaders(t, reqs[0], res.DeliveryID, "", now)
				event, data, ts := decodeEvent(t, reqs[0].body, "id", "reference", "amount", "currency", "operator", "phone_number", "status", "confirmed_at")
				if event != "transaction.test" || ts != now.Format(wireTime) {
					t.Errorf("event %q at %q", event, ts)
				}
				if data["status"] != "SUCCESS" || data["confirmed_at"] != nil || data["currency"] != "XAF" || stringOf(data["amount"]) != "1000" ||
					data["operator"] != "AIRTEL" || data["phone_number"] != "+23500000000" || !strings.HasPrefix(data["reference"].(string), "test_") {
					t.Errorf("test data %v", data)
				}
				// In the history as a test delivery with its one attempt;
				// never retried, nothing queued, not re-sendable.
				f.clock.Advance(3 * time.Hour)
				ds, err := f.app.Webhooks.Deliveries(ctx, f.merchant, 0)
				if err != nil || len(ds) != 1 {
					t.Fatalf("history after a test: %d deliveries, %v; want 1", len(ds), err)
				}
				d, wantState := ds[0], webhook.StateUndelivered
				if tt.status == 200 {
					wantState = webhook.StateDelivered
				}
				if d.ID != res.DeliveryID || !d.Test || d.Event != "transaction.test" || d.TransactionID != "" || d.EndpointID != e.ID ||
					d.State != wantState || d.AttemptCount != 1 || d.NextAttemptAt != nil || !bytes.Equal(d.Payload, reqs[0].body) {
					t.Errorf("test delivery %+v; want %s, test, no transaction, the bytes sent", d, wantState)
				}
				if len(d.Attempts) != 1 || d.Attempts[0] != res.DeliveryAttempt || !d.Attempts[0].Manual {
					t.Errorf("test delivery's attempts %+v; want exactly the result %+v", d.Attempts, res.DeliveryAttempt)
				}
				if wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID); wait != 0 || err != nil {
					t.Errorf("a scheduled run on a test delivery: %v, %v", wait, err)
				}
				if _, err := f.app.Webhooks.Resend(ctx, f.merchant, d.ID); code(err) != payment.EUNPROCESSABLE || !strings.Contains(err.Error(), "test event") {
					t.Errorf("re-send of a test event: %v; want refused", err)
				}
				checkQueue(t, f, 0, 0)
				if len(rc.requests()) != 1 {
					t.Errorf("receiver saw %d requests, want 1", len(rc.requests()))
				}
			})
		}
	}
}
