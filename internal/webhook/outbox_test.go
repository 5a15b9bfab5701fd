package webhook_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/webhook"
)

// TestOutbox checks which settlements queue deliveries: one per enabled,
// not deleted endpoint for SUCCESS, FAILED and TIMEOUT; none for EXPIRED.
func TestOutbox(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    payment.Status
		wantEvent string
	}{
		{payment.StatusSuccess, "transaction.success"},
		{payment.StatusFailed, "transaction.failed"},
		{payment.StatusTimeout, "transaction.timeout"},
		{payment.StatusExpired, ""},
	}
	for _, engine := range testdb.Engines {
		for _, tt := range tests {
			t.Run(engine+"/"+string(tt.status), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := setup(t, engine)
				rc := newReceiver(t, nil)
				active := []string{f.endpointAt(t, f.merchant, rc, "/a").ID, f.endpointAt(t, f.merchant, rc, "/b").ID}
				disabled, deleted := f.endpointAt(t, f.merchant, rc, "/c"), f.endpointAt(t, f.merchant, rc, "/d")
				if _, err := f.app.Webhooks.SetEndpointEnabled(ctx, f.merchant, disabled.ID, false); err != nil {
					t.Fatal(err)
				}
				if err := f.app.Webhooks.DeleteEndpoint(ctx, f.merchant, deleted.ID); err != nil {
					t.Fatal(err)
				}
				other := f.newMerchant(t)
				f.endpoint(t, other, rc)

				tx := f.settle(t, f.merchant, tt.status)
				ds, err := f.app.Webhooks.Deliveries(ctx, f.merchant, 0)
				if err != nil {
					t.Fatal(err)
				}
				if tt.wantEvent == "" {
					if len(ds) != 0 {
						t.Fatalf("%s queued %d deliveries, want none", tt.status, len(ds))
					}
					checkQueue(t, f, 0, 0)
					return
				}
				if len(ds) != len(active) {
					t.Fatalf("%d deliveries, want %d (enabled endpoints only)", len(ds), len(active))
				}
				checkQueue(t, f, int64(len(active)), 0) // due at once
				var endpoints []string
				for _, d := range ds {
					endpoints = append(endpoints, d.EndpointID)
					if d.Event != tt.wantEvent || d.TransactionID != tx.ID || d.State != webhook.StatePending || !strings.HasPrefix(d.URL, rc.URL+"/") || d.Test {
						t.Errorf("delivery %+v", d)
					}
					if string(d.Payload) != string(ds[0].Payload) {
						t.Errorf("payload differs between endpoints")
					}
					checkEventBody(t, d.Payload, tt.wantEvent, wantData(tx))
				}
				if ds[0].ID == ds[1].ID {
					t.Errorf("two endpoints share delivery id %s", ds[0].ID)
				}
				if slices.Sort(endpoints); !slices.Equal(endpoints, slices.Sorted(slices.Values(active))) {
					t.Errorf("deliveries go to %v, want %v", endpoints, active)
				}
				if ds, _ := f.app.Webhooks.Deliveries(ctx, other, 0); len(ds) != 0 {
					t.Errorf("another merchant got %d deliveries", len(ds))
				}
			})
		}
	}
}

// TestOutboxRollsBack checks the other half of the outbox: when the
// settling transaction fails after the hook, no delivery exists, none is
// due, and the payment is still PENDING.
func TestOutboxRollsBack(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		f.endpoint(t, f.merchant, newReceiver(t, nil))
		boom := errors.New("crash after the outbox")
		f.app.Transactions.OnSettled = func(ctx context.Context, tx *sql.Tx, t *payment.Transaction) (bool, error) {
			if _, err := f.app.Webhooks.Enqueue(ctx, tx, t); err != nil {
				return false, err
			}
			return false, boom
		}
		tx, err := f.app.Payments.Initiate(ctx, f.merchant, payment.CreateRequest{
			Reference: "rollback", Amount: 100, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: "+23560000003",
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.app.Payments.Settle(ctx, f.merchant, tx.ID, payment.StatusSuccess, payment.SourceSandbox, ""); !errors.Is(err, boom) {
			t.Fatalf("settle: %v, want the hook's error", err)
		}
		if got, _ := f.app.Payments.Get(ctx, f.merchant, tx.ID); got.Status != payment.StatusPending {
			t.Fatalf("status %s after rollback, want PENDING", got.Status)
		}
		if ds, _ := f.app.Webhooks.Deliveries(ctx, f.merchant, 0); len(ds) != 0 {
			t.Fatalf("%d deliveries survived the rollback", len(ds))
		}
		checkQueue(t, f, 0, 0)
	})
}

// TestMerchantScoping checks that no method reaches another merchant's
// endpoints or deliveries, and that malformed ids read as not found.
func TestMerchantScoping(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		rc := newReceiver(t, nil)
		e := f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusFailed)
		d := f.onlyDelivery(t, f.merchant)
		other := f.newMerchant(t)
		s := f.app.Webhooks

		checks := []struct {
			name string
			err  error
			want error
		}{
			{"disable other's endpoint", second(s.SetEndpointEnabled(ctx, other, e.ID, false)), webhook.ErrEndpointNotFound},
			{"delete other's endpoint", s.DeleteEndpoint(ctx, other, e.ID), webhook.ErrEndpointNotFound},
			{"delete malformed id", s.DeleteEndpoint(ctx, f.merchant, "not-a-uuid"), webhook.ErrEndpointNotFound},
			{"test other's endpoint", second(s.Test(ctx, other, e.ID)), webhook.ErrEndpointNotFound},
			{"read other's delivery", second(s.Delivery(ctx, other, d.ID)), webhook.ErrDeliveryNotFound},
			{"read malformed delivery", second(s.Delivery(ctx, f.merchant, "42")), webhook.ErrDeliveryNotFound},
			{"resend other's delivery", second(s.Resend(ctx, other, d.ID)), webhook.ErrDeliveryNotFound},
		}
		for _, c := range checks {
			if !errors.Is(c.err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
			}
		}
		// Another merchant's job id cannot make this merchant's attempt.
		if wait, err := s.Attempt(ctx, other, d.ID); wait != 0 || err != nil {
			t.Errorf("attempt under another merchant: %v, %v", wait, err)
		}
		if len(rc.requests()) != 0 {
			t.Errorf("receiver saw %d requests, want 0", len(rc.requests()))
		}
		if es, _ := s.Endpoints(ctx, other); len(es) != 0 {
			t.Errorf("other merchant lists %d endpoints", len(es))
		}
		if ds, _ := s.Deliveries(ctx, other, 0); len(ds) != 0 {
			t.Errorf("other merchant lists %d deliveries", len(ds))
		}
		if got, _ := s.Delivery(ctx, f.merchant, d.ID); got.AttemptCount != 0 {
			t.Errorf("delivery was attempted %d times", got.AttemptCount)
		}
	})
}

func second[T any](_ T, err error) error { return err }
