package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// TestSweeperTakesUpOverdueWork plays what a killed process leaves behind:
// no worker runs (as if every job were held by the dead process), and the
// sweeper alone must settle a payment past expires_at, while leaving alone
// a payment not yet overdue. (An attempt held by a dead process is the
// webhook dispatcher's: TestDispatcherTakesOverAfterTheLease.)
func TestSweeperTakesUpOverdueWork(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		clk := testserver.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
		a := openApp(t, engine, app.Config{PendingTTL: time.Minute, Now: clk.Now})
		m, err := a.Merchants.Create(ctx, "Sweep", "sweep@example.com", "correct horse battery", clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		s := &jobs.Sweeper{OverduePayments: a.Transactions.Overdue, Handlers: &jobs.Handlers{Payments: a.Payments}, Now: clk.Now, Logger: quiet}
		sweep := func(want int) {
			t.Helper()
			if n, err := s.Sweep(ctx); err != nil || n != want {
				t.Fatalf("sweep took on %d payments (%v), want %d", n, err, want)
			}
		}

		held := initiate(t, a, m.ID, "held")
		clk.Advance(30 * time.Second)
		later := initiate(t, a, m.ID, "later")

		// At expires_at the expiry check has its turn; a little later
		// the sweeper stops waiting for it.
		clk.Advance(30 * time.Second)
		sweep(0)
		clk.Advance(6 * time.Second)
		sweep(1)
		assertStatus(t, a, m.ID, held.ID, payment.StatusTimeout)
		assertStatus(t, a, m.ID, later.ID, payment.StatusPending)

		// The later payment is swept in its turn, not before.
		clk.Advance(20 * time.Second)
		sweep(0)
		clk.Advance(10 * time.Second)
		sweep(1)
		assertStatus(t, a, m.ID, later.ID, payment.StatusTimeout)
	})
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

// openApp opens the whole service on a fresh database of engine, with cfg's
// other settings and a quiet log, closed when the test ends.
func openApp(t *testing.T, engine string, cfg app.Config) *app.App {
	t.Helper()
	cfg.DatabaseURL = testdb.URL(t, engine)
	cfg.Logger = quiet
	a, err := app.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// quiet is the log of the services the tests open.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
