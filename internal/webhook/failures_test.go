package webhook_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/webhook"
)

// TestFailureKinds checks that each kind of failure the contract lists is
// recorded as a failed attempt with its reason, and rescheduled.
func TestFailureKinds(t *testing.T) {
	t.Parallel()
	target := newReceiver(t, nil) // where the redirect points: must never be hit
	release := make(chan struct{})
	hanging := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // before the receivers close
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	tests := []struct {
		name       string
		url        string
		answer     func(int, http.ResponseWriter, *http.Request)
		wantStatus int
		wantErr    string
	}{
		{name: "redirect is not followed", answer: func(_ int, w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/internal", http.StatusFound)
		}, wantStatus: 302, wantErr: "redirect not followed"},
		{name: "client error", answer: statuses(404), wantStatus: 404},
		{name: "server error", answer: statuses(503), wantStatus: 503},
		{name: "timeout", url: hanging.URL, wantErr: "timeout: no answer within 300ms"},
		{name: "DNS error", url: "http://no-such-host.invalid/hook", wantErr: "DNS lookup of no-such-host.invalid failed: no such host"},
		{name: "refused connection", url: closed.URL, wantErr: "connection refused"},
	}
	for _, engine := range testdb.Engines {
		for _, tt := range tests {
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := setup(t, engine)
				u := tt.url
				if u == "" {
					u = newReceiver(t, tt.answer).URL
				}
				if _, err := f.app.Webhooks.CreateEndpoint(ctx, f.merchant, u); err != nil {
					t.Fatal(err)
				}
				f.settle(t, f.merchant, payment.StatusSuccess)
				d := f.onlyDelivery(t, f.merchant)
				svc := f.service(false, 300*time.Millisecond)
				wait, err := svc.Attempt(ctx, f.merchant, d.ID)
				if err != nil || wait != time.Minute {
					t.Fatalf("attempt: wait %v, err %v; want 1m", wait, err)
				}
				got, _ := svc.Delivery(ctx, f.merchant, d.ID)
				a := got.Attempts[0]
				if got.State != webhook.StatePending || a.Succeeded || a.StatusCode != tt.wantStatus || !strings.Contains(a.Error, tt.wantErr) {
					t.Fatalf("attempt %+v; want status %d, error containing %q", a, tt.wantStatus, tt.wantErr)
				}
				if strings.Contains(a.Error, "whsec_") || strings.Contains(a.Error, "Post ") {
					t.Errorf("error text %q leaks internals", a.Error)
				}
			})
		}
	}
	t.Cleanup(func() {
		if n := len(target.requests()); n != 0 {
			t.Errorf("redirect target saw %d requests, want 0", n)
		}
	})
}

// TestLiveModeRefusesPrivateTargets is the SSRF check at send time: an
// endpoint stored under sandbox rules (loopback, or a name that resolves to
// a private address) gets a recorded failure in live mode, and the
// receiver is never contacted. (A literal private address is refused at
// registration in sandbox mode too: TestValidateURL.)
func TestLiveModeRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	port := must(url.Parse(rc.URL)).Port()
	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{"http scheme", rc.URL, "https"},
		{"loopback IP", "https://127.0.0.1:" + port + "/", "private, loopback"},
		{"localhost", "https://localhost:" + port + "/", "localhost"},
		{"name resolving to a private address, at dial time", "https://" + privateHostName(t) + ":" + port + "/", "destination address is not public"},
	}
	for _, engine := range testdb.Engines {
		for _, tt := range tests {
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				if strings.HasPrefix(tt.url, "https://:") {
					t.Skip("this machine's host name does not resolve to non-public addresses only")
				}
				ctx := context.Background()
				f := setup(t, engine)
				if _, err := f.app.Webhooks.CreateEndpoint(ctx, f.merchant, tt.url); err != nil { // sandbox rules
					t.Fatal(err)
				}
				f.settle(t, f.merchant, payment.StatusSuccess)
				d := f.onlyDelivery(t, f.merchant)
				live := f.service(true, 2*time.Second)
				if wait, err := live.Attempt(ctx, f.merchant, d.ID); err != nil || wait != time.Minute {
					t.Fatalf("attempt: %v, %v; want a failure rescheduled in 1m", wait, err)
				}
				got, _ := live.Delivery(ctx, f.merchant, d.ID)
				if a := got.Attempts[0]; a.Succeeded || a.StatusCode != 0 || !strings.Contains(a.Error, "refused") || !strings.Contains(a.Error, tt.wantErr) {
					t.Fatalf("attempt %+v; want refused: %s", a, tt.wantErr)
				}
			})
		}
	}
	t.Cleanup(func() {
		if n := len(rc.requests()); n != 0 {
			t.Errorf("receiver saw %d requests, want 0", n)
		}
	})
}

// privateHostName returns this machine's host name when it resolves only to
// non-public addresses and is not refused by name, or "".
func privateHostName(t *testing.T) string {
	name, err := os.Hostname()
	if err != nil || webhook.ValidateURL("https://"+name+"/", true) != nil {
		return ""
	}
	addrs, err := net.LookupHost(name)
	if err != nil || len(addrs) == 0 {
		return ""
	}
	for _, a := range addrs {
		if ip, err := netip.ParseAddr(a); err != nil || webhook.IsPublicAddr(ip) {
			return ""
		}
	}
	return name
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestAttemptRunsOnce checks that two concurrent runs of one delivery's job
// (a duplicate or rescued River job) send it once.
func TestAttemptRunsOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			time.Sleep(300 * time.Millisecond) // keep the first run in flight
		})
		f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusSuccess)
		d := f.onlyDelivery(t, f.merchant)

		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { _, errs[i] = f.app.Webhooks.Attempt(ctx, f.merchant, d.ID) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID); wait != 0 || err != nil {
			t.Fatalf("run after delivery: %v, %v", wait, err)
		}
		got, _ := f.app.Webhooks.Delivery(ctx, f.merchant, d.ID)
		if n := len(rc.requests()); n != 1 || got.State != webhook.StateDelivered || len(got.Attempts) != 1 {
			t.Fatalf("%d requests, state %s, %d attempts; want 1, delivered, 1", n, got.State, len(got.Attempts))
		}
	})
}

// TestNoConnectionHeldDuringSend checks that while a receiver is answering,
// the database is free: the receiver itself writes to it (with a deadline)
// before answering. On SQLite, with its single connection, an attempt that
// kept a transaction or a connection open would make that write time out.
// It also covers a disabled endpoint: its pending delivery turns undelivered
// without being sent, and can then be re-sent by hand.
func TestNoConnectionHeldDuringSend(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		var mu sync.Mutex
		var writeErrs []error
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			wctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			_, err := f.app.DB.ExecContext(wctx, `UPDATE merchants SET name = name WHERE id = $1`, f.merchant)
			mu.Lock()
			writeErrs = append(writeErrs, err)
			mu.Unlock()
		})
		e := f.endpoint(t, f.merchant, rc)

		f.settle(t, f.merchant, payment.StatusSuccess)
		first := f.onlyDelivery(t, f.merchant)
		if _, err := f.app.Webhooks.Attempt(ctx, f.merchant, first.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.app.Webhooks.Test(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}

		// Disabled endpoint: the queued delivery is not sent...
		f.settle(t, f.merchant, payment.StatusFailed)
		ds, _ := f.app.Webhooks.Deliveries(ctx, f.merchant, 0)
		second := ds[0]
		if _, err := f.app.Webhooks.SetEndpointEnabled(ctx, f.merchant, e.ID, false); err != nil {
			t.Fatal(err)
		}
		if wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, second.ID); wait != 0 || err != nil {
			t.Fatalf("attempt to a disabled endpoint: %v, %v", wait, err)
		}
		if got, _ := f.app.Webhooks.Delivery(ctx, f.merchant, second.ID); got.State != webhook.StateUndelivered || got.AttemptCount != 0 {
			t.Fatalf("delivery to a disabled endpoint: %s after %d attempts; want undelivered, 0", got.State, got.AttemptCount)
		}
		if n := len(rc.requests()); n != 2 {
			t.Fatalf("receiver saw %d requests, want 2", n)
		}
		// ...but a person can still re-send it.
		if a, err := f.app.Webhooks.Resend(ctx, f.merchant, second.ID); err != nil || !a.Succeeded || a.Number != 1 || !a.Manual {
			t.Fatalf("re-send: %+v, %v", a, err)
		}

		mu.Lock()
		defer mu.Unlock()
		if len(writeErrs) != 3 {
			t.Fatalf("receiver wrote %d times, want 3", len(writeErrs))
		}
		for i, err := range writeErrs {
			if err != nil {
				t.Errorf("write %d during a send: %v (the database was held)", i+1, err)
			}
		}
	})
}

// TestShutdownRecordsTheAttempt: when the worker's context ends during a
// send (the process is stopping), the attempt, which may have reached the
// receiver, stays in the history as interrupted and counts; the lease is
// given back, so the next run sends at once instead of waiting for it.
func TestShutdownRecordsTheAttempt(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		arrived := make(chan struct{}, 1)
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				arrived <- struct{}{}
				<-r.Context().Done() // hang until the sender gives up
			}
		})
		f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusTimeout)
		d := f.onlyDelivery(t, f.merchant)
		sentAt := f.clock.Now()

		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-arrived; cancel() }()
		if wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID); err == nil || wait != 0 {
			t.Fatalf("interrupted attempt: %v, %v; want the context's error", wait, err)
		}
		got, _ := f.app.Webhooks.Delivery(context.Background(), f.merchant, d.ID)
		if got.State != webhook.StatePending || got.AttemptCount != 1 || len(got.Attempts) != 1 || !got.NextAttemptAt.Equal(*d.NextAttemptAt) {
			t.Fatalf("after shutdown: %s, %d attempts, next %v; want pending, 1, unchanged", got.State, got.AttemptCount, got.NextAttemptAt)
		}
		if a := got.Attempts[0]; !a.Interrupted || a.InProgress || a.Number != 1 || !a.AttemptedAt.Equal(sentAt) ||
			a.Error != "no answer recorded: the service shut down during the attempt" {
			t.Fatalf("interrupted attempt recorded as %+v", a)
		}
		if wait, err := f.app.Webhooks.Attempt(context.Background(), f.merchant, d.ID); wait != 0 || err != nil {
			t.Fatalf("next run: %v, %v", wait, err)
		}
		got, _ = f.app.Webhooks.Delivery(context.Background(), f.merchant, d.ID)
		if got.State != webhook.StateDelivered || len(got.Attempts) != 2 || !got.Attempts[0].Interrupted || got.Attempts[1].Number != 2 ||
			!got.Attempts[1].Succeeded || len(rc.requests()) != 2 {
			t.Fatalf("after the next run: %s, attempts %+v, %d requests", got.State, got.Attempts, len(rc.requests()))
		}
		checkEventBody(t, got.Payload, "transaction.timeout", wantData(must(f.app.Payments.Get(context.Background(), f.merchant, got.TransactionID))))
	})
}
