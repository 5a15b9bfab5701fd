package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// TestResendPending: a merchant who fixed their receiver need not wait for
// the schedule. A manual attempt of a pending delivery that fails leaves the
// automatic schedule exactly as it was (same next attempt, same remaining
// attempts); one that succeeds makes it delivered, and the scheduled run
// then sends nothing.
func TestResendPending(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		// Requests 1 to 3 fail, the rest succeed.
		rc := newReceiver(t, statuses(500, 500, 500, 200))
		f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusSuccess)
		d := f.onlyDelivery(t, f.merchant)
		s := f.app.Webhooks

		if wait, err := s.Attempt(ctx, f.merchant, d.ID); err != nil || wait != time.Minute { // request 1
			t.Fatalf("first attempt: %v, %v", wait, err)
		}
		before, _ := s.Delivery(ctx, f.merchant, d.ID)
		f.clock.Advance(20 * time.Second)
		a, err := s.Resend(ctx, f.merchant, d.ID) // request 2, fails
		if err != nil || a.Succeeded || a.StatusCode != 500 || !a.Manual || a.Number != 2 || !a.AttemptedAt.Equal(f.clock.Now()) {
			t.Fatalf("manual attempt of a pending delivery: %+v, %v", a, err)
		}
		got, _ := s.Delivery(ctx, f.merchant, d.ID)
		if got.State != webhook.StatePending || got.AttemptCount != 2 || !got.NextAttemptAt.Equal(*before.NextAttemptAt) {
			t.Fatalf("after a failed manual attempt: %s, %d attempts, next %v; want pending, 2, still %v",
				got.State, got.AttemptCount, got.NextAttemptAt, before.NextAttemptAt)
		}
		// The schedule is untouched: not due yet, and the next automatic
		// attempt is the second of five (5 min after it, not 30).
		if wait, err := s.Attempt(ctx, f.merchant, d.ID); err != nil || wait != 40*time.Second {
			t.Fatalf("scheduled run before its time: %v, %v; want 40s", wait, err)
		}
		f.clock.Advance(40 * time.Second)
		if wait, err := s.Attempt(ctx, f.merchant, d.ID); err != nil || wait != 5*time.Minute { // request 3
			t.Fatalf("second automatic attempt: %v, %v; want a failure rescheduled in 5m", wait, err)
		}

		f.clock.Advance(time.Minute)
		a, err = s.Resend(ctx, f.merchant, d.ID) // request 4, succeeds
		if err != nil || !a.Succeeded || a.Number != 4 || !a.Manual {
			t.Fatalf("successful manual attempt: %+v, %v", a, err)
		}
		f.clock.Advance(5 * time.Minute)
		if wait, err := s.Attempt(ctx, f.merchant, d.ID); err != nil || wait != 0 {
			t.Fatalf("scheduled run after delivery: %v, %v; want nothing to do", wait, err)
		}
		got, _ = s.Delivery(ctx, f.merchant, d.ID)
		if n := len(rc.requests()); n != 4 || got.State != webhook.StateDelivered || got.NextAttemptAt != nil || got.AttemptCount != 4 {
			t.Fatalf("%d requests, %s, next %v, %d attempts; want 4, delivered, none, 4", n, got.State, got.NextAttemptAt, got.AttemptCount)
		}
		for i, wantManual := range []bool{false, true, false, true} {
			if a := got.Attempts[i]; a.Number != i+1 || a.Manual != wantManual {
				t.Errorf("attempt %d: %+v; want manual=%v", i+1, a, wantManual)
			}
		}
		for _, r := range rc.requests() {
			if r.header.Get("X-Service-Delivery-Id") != d.ID || string(r.body) != string(got.Payload) || !r.serviceSigOK {
				t.Errorf("a request differs from the delivery: id %s", r.header.Get("X-Service-Delivery-Id"))
			}
		}
		if _, err := s.Resend(ctx, f.merchant, d.ID); code(err) != payment.EUNPROCESSABLE || !strings.Contains(err.Error(), "delivered already") {
			t.Fatalf("re-send of a delivered delivery: %v", err)
		}
	})
}

// TestResendDuringAnAttempt: a manual attempt is refused while another
// attempt of the delivery is in flight, and a scheduled run waits for a
// manual one in flight.
func TestResendDuringAnAttempt(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		arrived, release := make(chan struct{}), make(chan struct{})
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				close(arrived)
				<-release
			}
		})
		f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusFailed)
		d := f.onlyDelivery(t, f.merchant)
		done := make(chan error, 1)
		go func() {
			_, err := f.app.Webhooks.Resend(ctx, f.merchant, d.ID)
			done <- err
		}()
		<-arrived
		_, resendErr := f.app.Webhooks.Resend(ctx, f.merchant, d.ID)
		wait, attemptErr := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID)
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if code(resendErr) != payment.EUNPROCESSABLE || !strings.Contains(resendErr.Error(), "being attempted") {
			t.Errorf("second re-send during the first: %v", resendErr)
		}
		if attemptErr != nil || wait <= 0 {
			t.Errorf("scheduled run during a manual attempt: %v, %v; want to wait for it", wait, attemptErr)
		}
		if got, _ := f.app.Webhooks.Delivery(ctx, f.merchant, d.ID); len(rc.requests()) != 1 || got.State != webhook.StateDelivered || got.AttemptCount != 1 {
			t.Fatalf("%d requests, %s after %d attempts; want 1, delivered, 1", len(rc.requests()), got.State, got.AttemptCount)
		}
	})
}

// TestManualSendsBoundedPerEndpoint: while ManualPerEndpoint test events
// wait on an endpoint that does not answer, another test event or a
// re-send to it is refused (ErrManualBusy, nothing written or sent), and
// another endpoint is not affected; once they end, a test goes through.
func TestManualSendsBoundedPerEndpoint(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		release := make(chan struct{})
		slow := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		e := f.endpoint(t, f.merchant, slow)
		// An undelivered delivery to re-send: its five attempts spent.
		f.settle(t, f.merchant, payment.StatusFailed)
		d := f.onlyDelivery(t, f.merchant)
		if _, err := f.app.DB.Exec(`UPDATE webhook_deliveries SET state = 'undelivered', next_attempt_at = NULL WHERE id = $1`, d.ID); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, webhook.ManualPerEndpoint)
		for range webhook.ManualPerEndpoint {
			go func() {
				_, err := s.Test(ctx, f.merchant, e.ID)
				done <- err
			}()
		}
		slow.waitFor(t, webhook.ManualPerEndpoint, 10*time.Second, nil)
		if _, err := s.Test(ctx, f.merchant, e.ID); !errors.Is(err, webhook.ErrManualBusy) || code(err) != payment.EUNPROCESSABLE {
			t.Errorf("a third test event: %v, want ErrManualBusy", err)
		}
		if _, err := s.Resend(ctx, f.merchant, d.ID); !errors.Is(err, webhook.ErrManualBusy) {
			t.Errorf("a re-send meanwhile: %v, want ErrManualBusy", err)
		}
		fast := newReceiver(t, nil)
		other := f.endpoint(t, f.merchant, fast)
		if res, err := s.Test(ctx, f.merchant, other.ID); err != nil || !res.Succeeded {
			t.Errorf("a test event to another endpoint: %+v, %v", res, err)
		}
		close(release)
		for range webhook.ManualPerEndpoint {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if n := len(slow.requests()); n != webhook.ManualPerEndpoint {
			t.Errorf("%d requests reached the endpoint, want %d", n, webhook.ManualPerEndpoint)
		}
		if res, err := s.Test(ctx, f.merchant, e.ID); err != nil || !res.Succeeded {
			t.Errorf("a test event once they ended: %+v, %v", res, err)
		}
	})
}

// TestDisableGivesUpAtOnce: disabling or deleting an endpoint makes its
// waiting deliveries undelivered in the same commit, not when a dispatcher
// next looks: enabled again at once (or while no server runs), the
// endpoint does not get them unless a person re-sends them.
func TestDisableGivesUpAtOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		rc := newReceiver(t, statuses(500, 200))
		e := f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusSuccess)
		d := f.onlyDelivery(t, f.merchant)
		// A first attempt fails: the next one waits a minute.
		if wait, err := s.Attempt(ctx, f.merchant, d.ID); err != nil || wait <= 0 {
			t.Fatalf("first attempt: %v, %v", wait, err)
		}
		if _, err := s.SetEndpointEnabled(ctx, f.merchant, e.ID, false); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Delivery(ctx, f.merchant, d.ID); got.State != webhook.StateUndelivered || got.AttemptCount != 1 {
			t.Fatalf("right after disabling: %s after %d attempts, want undelivered after 1", got.State, got.AttemptCount)
		}
		if _, err := s.SetEndpointEnabled(ctx, f.merchant, e.ID, true); err != nil {
			t.Fatal(err)
		}
		if wait, err := s.Attempt(ctx, f.merchant, d.ID); wait != 0 || err != nil {
			t.Fatal(wait, err)
		}
		if got, _ := s.Delivery(ctx, f.merchant, d.ID); got.State != webhook.StateUndelivered || len(rc.requests()) != 1 {
			t.Fatalf("enabled again: %s after %d requests, want undelivered and no second one", got.State, len(rc.requests()))
		}
		if a, err := s.Resend(ctx, f.merchant, d.ID); err != nil || !a.Succeeded || !a.Manual {
			t.Fatalf("re-send: %+v, %v", a, err)
		}

		// Deleted: the same, and another endpoint's delivery is untouched.
		other := f.endpoint(t, f.merchant, newReceiver(t, nil))
		f.settle(t, f.merchant, payment.StatusFailed)
		ds, err := s.Deliveries(ctx, f.merchant, 0)
		if err != nil || len(ds) != 3 {
			t.Fatalf("%d deliveries, %v; want 3", len(ds), err)
		}
		if err := s.DeleteEndpoint(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}
		for _, d := range ds[:2] {
			got, _ := s.Delivery(ctx, f.merchant, d.ID)
			want := webhook.StatePending
			if d.EndpointID == e.ID {
				want = webhook.StateUndelivered
			} else if d.EndpointID != other.ID {
				t.Fatalf("delivery %s is for endpoint %s", d.ID, d.EndpointID)
			}
			if got.State != want {
				t.Errorf("after deleting %s: delivery to %s is %s, want %s", e.ID, d.EndpointID, got.State, want)
			}
		}
	})
}

// TestEnableEndpoint: a disabled endpoint can be enabled again; it then
// receives new events, and deliveries that turned undelivered while it was
// disabled can be re-sent.
func TestEnableEndpoint(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		rc := newReceiver(t, nil)
		e := f.endpoint(t, f.merchant, rc)
		if _, err := s.SetEndpointEnabled(ctx, f.merchant, e.ID, false); err != nil {
			t.Fatal(err)
		}
		f.settle(t, f.merchant, payment.StatusSuccess)
		if ds, _ := s.Deliveries(ctx, f.merchant, 0); len(ds) != 0 {
			t.Fatalf("a disabled endpoint got %d deliveries", len(ds))
		}
		if changed, err := s.SetEndpointEnabled(ctx, f.merchant, e.ID, true); err != nil || !changed {
			t.Fatal(changed, err)
		}
		if changed, err := s.SetEndpointEnabled(ctx, f.merchant, e.ID, true); err != nil || changed {
			t.Fatalf("a second enable: changed %v, %v; want an unchanged success", changed, err)
		}
		if list, _ := s.Endpoints(ctx, f.merchant); len(list) != 1 || !list[0].Enabled {
			t.Fatalf("after enable: %+v", list)
		}

		// Queued, then disabled: undelivered without a send.
		f.settle(t, f.merchant, payment.StatusFailed)
		d := f.onlyDelivery(t, f.merchant)
		if _, err := s.SetEndpointEnabled(ctx, f.merchant, e.ID, false); err != nil {
			t.Fatal(err)
		}
		if wait, err := s.Attempt(ctx, f.merchant, d.ID); wait != 0 || err != nil {
			t.Fatal(wait, err)
		}
		if got, _ := s.Delivery(ctx, f.merchant, d.ID); got.State != webhook.StateUndelivered || len(rc.requests()) != 0 {
			t.Fatalf("while disabled: %s, %d requests", got.State, len(rc.requests()))
		}
		// Enabled again: new events flow and the missed one can be re-sent.
		if _, err := s.SetEndpointEnabled(ctx, f.merchant, e.ID, true); err != nil {
			t.Fatal(err)
		}
		f.settle(t, f.merchant, payment.StatusTimeout)
		ds, _ := s.Deliveries(ctx, f.merchant, 0)
		if len(ds) != 2 || ds[0].State != webhook.StatePending {
			t.Fatalf("after re-enabling: %d deliveries, newest %s", len(ds), ds[0].State)
		}
		if wait, err := s.Attempt(ctx, f.merchant, ds[0].ID); wait != 0 || err != nil {
			t.Fatal(wait, err)
		}
		if a, err := s.Resend(ctx, f.merchant, d.ID); err != nil || !a.Succeeded {
			t.Fatalf("re-send of the missed event: %+v, %v", a, err)
		}
		ds, _ = s.Deliveries(ctx, f.merchant, 0)
		if ds[0].State != webhook.StateDelivered || ds[1].State != webhook.StateDelivered || len(rc.requests()) != 2 {
			t.Fatalf("states %s, %s with %d requests; want both delivered, 2", ds[0].State, ds[1].State, len(rc.requests()))
		}

		other := f.newMerchant(t)
		for _, tt := range []struct{ merchant, id string }{
			{f.merchant, uuid.NewString()}, {f.merchant, "not-an-id"}, {other, e.ID},
		} {
			if _, err := s.SetEndpointEnabled(ctx, tt.merchant, tt.id, true); !errors.Is(err, webhook.ErrEndpointNotFound) {
				t.Errorf("enable %s of merchant %s: %v, want not found", tt.id, tt.merchant, err)
			}
		}
		if err := s.DeleteEndpoint(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetEndpointEnabled(ctx, f.merchant, e.ID, true); !errors.Is(err, webhook.ErrEndpointNotFound) {
			t.Errorf("enable of a deleted endpoint: %v, want not found", err)
		}
	})
}

// TestDuplicateURL: one receiver cannot be registered twice by one
// merchant under any spelling of its URL, enabled or disabled, even by
// concurrent requests; a deleted endpoint's URL can be registered again,
// and another merchant may use the same URL.
func TestDuplicateURL(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		first, err := s.CreateEndpoint(ctx, f.merchant, "https://Shop.Example.td:443/hooks/momopay")
		if err != nil {
			t.Fatal(err)
		}
		checkDuplicate := func(url, existing string) {
			t.Helper()
			e, err := s.CreateEndpoint(ctx, f.merchant, url)
			var pe *payment.Error
			if e != nil || !errors.As(err, &pe) || pe.Code != payment.EUNPROCESSABLE || !strings.Contains(pe.Fields["url"], "registered already") ||
				!strings.Contains(pe.Fields["url"], existing) {
				t.Errorf("register %s again: %v, %v; want EUNPROCESSABLE naming url and endpoint %s", url, e, err, existing)
			}
		}
		for _, same := range []string{
			"https://Shop.Example.td:443/hooks/momopay",
			"https://shop.example.td/hooks/momopay",
			"HTTPS://SHOP.EXAMPLE.TD/hooks/momopay",
			"https://shop.example.td./hooks/momopay",
		} {
			checkDuplicate(same, first.ID)
		}
		distinct := []string{
			"http://shop.example.td/hooks/momopay",       // another scheme
			"https://shop.example.td:8443/hooks/momopay", // another port
			"https://shop.example.td/hooks/MomoPay",      // paths are case-sensitive
			"https://shop.example.td/hooks/momopay?v=2",  // another query
		}
		for _, u := range distinct {
			if _, err := s.CreateEndpoint(ctx, f.merchant, u); err != nil {
				t.Errorf("register %s: %v", u, err)
			}
		}
		// Disabled still counts; deleted does not.
		if _, err := s.SetEndpointEnabled(ctx, f.merchant, first.ID, false); err != nil {
			t.Fatal(err)
		}
		checkDuplicate("https://shop.example.td/hooks/momopay", first.ID)
		if err := s.DeleteEndpoint(ctx, f.merchant, first.ID); err != nil {
			t.Fatal(err)
		}
		again, err := s.CreateEndpoint(ctx, f.merchant, "https://shop.example.td/hooks/momopay")
		if err != nil {
			t.Fatalf("register a deleted endpoint's URL: %v", err)
		}
		checkDuplicate("https://shop.example.td:443/hooks/momopay", again.ID)
		if _, err := s.CreateEndpoint(ctx, f.newMerchant(t), "https://shop.example.td/hooks/momopay"); err != nil {
			t.Errorf("another merchant with the same URL: %v", err)
		}

		// An endpoint stored before URL keys existed (url_key NULL) counts too.
		legacy := uuid.NewString()
		if _, err := f.app.DB.Exec(`INSERT INTO webhook_endpoints (id, merchant_id, url, secret, enabled, created_at)
			VALUES ($1, $2, 'https://Legacy.example.td/hook', 'whsec_x', TRUE, $3)`, legacy, f.merchant, f.app.DB.Time(f.clock.Now())); err != nil {
			t.Fatal(err)
		}
		checkDuplicate("https://legacy.example.td:443/hook", legacy)

		// Concurrent registrations of one new URL: exactly one wins, the
		// others get the same validation error, never an internal one.
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Go(func() { _, errs[i] = s.CreateEndpoint(ctx, f.merchant, "https://race.example.td/hook") })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case code(err) != payment.EUNPROCESSABLE || !strings.Contains(err.Error(), "registered already"):
				t.Errorf("a concurrent registration failed with %v", err)
			}
		}
		list, _ := s.Endpoints(ctx, f.merchant)
		n := 0
		for _, e := range list {
			if e.URL == "https://race.example.td/hook" {
				n++
			}
		}
		if won != 1 || n != 1 {
			t.Errorf("%d concurrent registrations succeeded and %d endpoints exist, want 1 and 1", won, n)
		}
	})
}

func TestURLKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://Shop.Example.td:443/Hook?a=B", "https://shop.example.td/Hook?a=B"},
		{"HTTP://shop.example.td:80", "http://shop.example.td/"},
		{"http://shop.example.td:443/", "http://shop.example.td:443/"},
		{"https://shop.example.td.:8443/x#frag", "https://shop.example.td:8443/x"},
		{"http://[::1]:80/h", "http://[::1]/h"},
		{"http://[::1]:9000/h", "http://[::1]:9000/h"},
	}
	for _, tt := range tests {
		if got := webhook.URLKey(tt.in); got != tt.want {
			t.Errorf("URLKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
