package webhook_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// TestConcurrentAttemptsKeepTheirOwnOutcomes runs the attempts of many
// deliveries at once, as the worker pool does, with receivers that answer
// differently per endpoint and echo the delivery id, and with runs for a
// merchant that does not own the delivery mixed in. Those attempts share
// batched statements (PostgreSQL) or transactions (SQLite), so this is
// what shows that each delivery gets its own claim, its own outcome and
// its own state, and that a batch keeps every merchant to its own
// deliveries.
func TestConcurrentAttemptsKeepTheirOwnOutcomes(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		// Each round's answers wait for its gate (round, below).
		var gate atomic.Pointer[chan struct{}]
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-*gate.Load():
			case <-time.After(5 * time.Second):
			}
			if strings.HasPrefix(r.URL.Path, "/refuse") {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			io.WriteString(w, r.Header.Get("X-Service-Delivery-Id"))
		})
		for _, path := range []string{"/accept-1", "/refuse-1", "/accept-2", "/refuse-2"} {
			f.endpointAt(t, f.merchant, rc, path)
		}
		for range 6 {
			f.settle(t, f.merchant, payment.StatusSuccess)
		}
		ds, err := f.app.Webhooks.Deliveries(ctx, f.merchant, 0)
		if err != nil || len(ds) != 24 {
			t.Fatalf("%d deliveries, %v; want 24", len(ds), err)
		}
		stranger := f.newMerchant(t)

		// round opens a gate once the receiver holds total requests: they
		// are answered together while the test holds a database
		// connection for a moment (on SQLite, the only writer), so their
		// outcomes queue and are recorded together, as under load.
		round := func(total int) {
			g := make(chan struct{})
			gate.Store(&g)
			go func() {
				for deadline := time.Now().Add(5 * time.Second); len(rc.requests()) < total && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				conn, err := f.app.DB.Conn(ctx)
				close(g)
				if err == nil {
					time.Sleep(100 * time.Millisecond)
					conn.Close()
				}
			}()
		}

		// First the owner's attempts of half the deliveries with the
		// stranger's of the other half, then the owner's of that half.
		half := len(ds) / 2
		round(half)
		attemptAll(t, func(i int) (string, string) {
			if i < half {
				return f.merchant, ds[i].ID
			}
			return stranger, ds[i].ID
		}, len(ds), f.app.Webhooks)
		if n := len(rc.requests()); n != half {
			t.Fatalf("receiver got %d requests, want %d: only the owner's attempts send", n, half)
		}
		for _, d := range ds[half:] {
			if got, _ := f.app.Webhooks.Delivery(ctx, f.merchant, d.ID); len(got.Attempts) != 0 {
				t.Fatalf("delivery %s was attempted for a merchant that does not own it", d.ID)
			}
		}
		round(len(ds))
		attemptAll(t, func(i int) (string, string) { return f.merchant, ds[half+i].ID }, len(ds)-half, f.app.Webhooks)

		if n := len(rc.requests()); n != len(ds) {
			t.Errorf("receiver got %d requests, want one per delivery (%d)", n, len(ds))
		}
		for _, d := range ds {
			got, err := f.app.Webhooks.Delivery(ctx, f.merchant, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			refused := strings.Contains(d.URL, "/refuse")
			want, code := webhook.StateDelivered, http.StatusOK
			if refused {
				want, code = webhook.StatePending, http.StatusServiceUnavailable
			}
			if got.State != want || len(got.Attempts) != 1 {
				t.Errorf("delivery to %s: state %s with %d attempts, want %s with 1", d.URL, got.State, len(got.Attempts), want)
				continue
			}
			a := got.Attempts[0]
			if a.StatusCode != code || a.ResponseExcerpt != d.ID || a.Number != 1 || a.InProgress {
				t.Errorf("delivery %s to %s: attempt %+v, want status %d and its own id echoed", d.ID, d.URL, a, code)
			}
			if refused && (got.NextAttemptAt == nil || got.NextAttemptAt.Sub(f.clock.Now()) != time.Minute) {
				t.Errorf("refused delivery %s: next attempt at %v, want a minute after %v", d.ID, got.NextAttemptAt, f.clock.Now())
			}
		}
	})
}

// attemptAll runs n attempts at once, the i-th of them for call(i)'s
// merchant and delivery.
func attemptAll(t *testing.T, call func(i int) (merchant, delivery string), n int, s *webhook.Service) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			merchant, delivery := call(i)
			_, errs[i] = s.Attempt(context.Background(), merchant, delivery)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
