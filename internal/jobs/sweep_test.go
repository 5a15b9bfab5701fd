package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
	"github.com/momopay/momopay/internal/webhook"
)

// TestSweeperTakesUpOverdueWork plays what a killed process leaves behind:
// no worker runs (as if every job were held by the dead process), and the
// sweeper alone must settle a payment past expires_at and make a delivery's
// overdue attempt, while leaving alone a payment not yet overdue and a
// delivery whose attempt is under a live lease.
func TestSweeperTakesUpOverdueWork(t *testing.T) {
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			clk := testserver.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			a, err := app.Open(ctx, app.Config{DatabaseURL: testdb.URL(t, engine), PendingTTL: time.Minute, Now: clk.Now, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			m, err := a.Merchants.Create(ctx, "Sweep", "sweep@example.com", "correct horse battery", clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			var received atomic.Int32
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { received.Add(1) }))
			t.Cleanup(rc.Close)
			if _, err := a.Webhooks.CreateEndpoint(ctx, m.ID, rc.URL); err != nil {
				t.Fatal(err)
			}
			s := &jobs.Sweeper{OverduePayments: a.Transactions.Overdue, OverdueDeliveries: a.Webhooks.Overdue, Handlers: &jobs.Handlers{Payments: a.Payments, Deliveries: a.Webhooks}, Now: clk.Now, Logger: quiet}
			sweep := func(wantPayments, wantDeliveries int) {
				t.Helper()
				p, d, err := s.Sweep(ctx)
				if err != nil || p != wantPayments || d != wantDeliveries {
					t.Fatalf("sweep took on %d payments and %d deliveries (%v), want %d and %d", p, d, err, wantPayments, wantDeliveries)
				}
			}

			held := initiate(t, a, m.ID, "held")
			clk.Advance(30 * time.Second)
			later := initiate(t, a, m.ID, "later")

			// At expires_at the expiry check has its turn; a little later
			// the sweeper stops waiting for it.
			clk.Advance(30 * time.Second)
			sweep(0, 0)
			clk.Advance(6 * time.Second)
			sweep(1, 0)
			assertStatus(t, a, m.ID, held.ID, payment.StatusTimeout)
			assertStatus(t, a, m.ID, later.ID, payment.StatusPending)

			// The TIMEOUT's delivery is due now; its job has its turn first.
			sweep(0, 0)
			// A process took the attempt and holds its lease: not overdue.
			if _, err := a.DB.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_until = $1`, a.DB.Time(clk.Now().Add(15*time.Second))); err != nil {
				t.Fatal(err)
			}
			clk.Advance(10 * time.Second)
			sweep(0, 0)
			// The lease ran out: the process is gone, the sweeper attempts.
			clk.Advance(6 * time.Second)
			sweep(0, 1)
			if n := received.Load(); n != 1 {
				t.Fatalf("the receiver got %d requests, want 1", n)
			}
			ds, err := a.Webhooks.Deliveries(ctx, m.ID, 0)
			if err != nil || len(ds) != 1 || ds[0].State != webhook.StateDelivered {
				t.Fatalf("deliveries after the sweep: %+v %v", ds, err)
			}
			// The later payment is swept in its turn.
			clk.Advance(14 * time.Second)
			sweep(1, 0)
			assertStatus(t, a, m.ID, later.ID, payment.StatusTimeout)
		})
	}
}

func initiate(t *testing.T, a *app.App, merchant, ref string) *payment.Transaction {
	t.Helper()
	tx, err := a.Payments.Initiate(context.Background(), merchant, payment.CreateRequest{
		Reference: ref, Amount: 5000, Currency: "XAF", Operator: "MOOV", PhoneNumber: "+23560000003",
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func assertStatus(t *testing.T, a *app.App, merchant, id string, want payment.Status) {
	t.Helper()
	got, err := a.Payments.Get(context.Background(), merchant, id)
	if err != nil || got.Status != want {
		t.Fatalf("status of %s: %v (%v), want %s", id, got, err, want)
	}
}
