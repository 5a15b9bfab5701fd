package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
)

// TestWebhookStartsOnNotify: on PostgreSQL a webhook's first attempt starts
// when the settling transaction commits, told by LISTEN/NOTIFY, not at the
// next poll: with the queues polling once an hour, the receiver still gets
// the event. Before the workers ran on River's pgx driver, nothing listened
// and the event waited for the poll.
func TestWebhookStartsOnNotify(t *testing.T) {
	ctx := t.Context()
	got := make(chan string, 1)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		got <- r.Header.Get("webhook-id")
	}))
	defer rc.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.Open(ctx, app.Config{DatabaseURL: testdb.URL(t, "postgres"), JobPollInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	m, err := a.Merchants.Create(ctx, "Notify", "notify@example.com", "correct horse battery", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Webhooks.CreateEndpoint(ctx, m.ID, rc.URL); err != nil {
		t.Fatal(err)
	}
	if err := a.Jobs.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Jobs.Stop(context.WithoutCancel(ctx))
	// River fetches once at start; let that pass so only a notification
	// can start the attempt.
	time.Sleep(500 * time.Millisecond)
	tx := initiate(t, a, m.ID, "notify-1")
	if _, _, err := a.Payments.Settle(ctx, m.ID, tx.ID, payment.StatusSuccess, payment.SourceSandbox, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id == "" {
			t.Error("the webhook arrived without its webhook-id")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook within 30 s with hourly polls: the insert's NOTIFY did not start the worker")
	}
}
