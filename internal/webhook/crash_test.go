package webhook_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/webhook"
)

// interruptedText is what the history says of an attempt whose process
// stopped before recording the answer.
const interruptedText = "no answer recorded: the process stopped during the attempt"

// TestAttemptInterruptedByCrash kills a process in the middle of an attempt:
// a second webhook service, on its own connection to the same database,
// claims and sends the attempt, and its database is closed while the
// receiver holds the request, so it can record nothing more (as after
// SIGKILL). The surviving process (the fixture's app, on the same fake
// clock) then takes over once the lease is over. The history must list the
// attempt that was sent, as interrupted and counted. After one crash the
// next attempt is made at once and the schedule goes on from there; when
// the attempt that took over dies too, the next waits the schedule's delay
// from its start (a crash loop does not spend the five attempts in
// seconds); an interrupted fifth attempt makes the delivery undelivered.
func TestAttemptInterruptedByCrash(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// failFirst automatic attempts fail (HTTP 500) before the ones
		// interrupted, by crashes processes dying in a row.
		failFirst, crashes int
		// after the takeover: the wait it returns, the state, and how many
		// requests the receiver saw in all.
		wantWait     time.Duration
		wantState    webhook.DeliveryState
		wantRequests int
	}{
		{"first attempt", 0, 1, 5 * time.Minute, webhook.StatePending, 2},
		{"first attempt and its takeover", 0, 2, 5*time.Minute - 70*time.Second, webhook.StatePending, 2},
		{"fifth attempt", 4, 1, 0, webhook.StateUndelivered, 5},
	}
	for _, engine := range testdb.Engines {
		for _, tt := range tests {
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := setup(t, engine)
				interrupted := tt.failFirst + 1
				dies := func(n int) bool { return n >= interrupted && n < interrupted+tt.crashes }
				arrived, release := make(chan struct{}, tt.crashes), make([]chan struct{}, tt.crashes)
				for i := range release {
					release[i] = make(chan struct{})
				}
				rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
					if dies(n) {
						arrived <- struct{}{}
						<-release[n-interrupted] // the answer comes after the process died
						return
					}
					w.WriteHeader(http.StatusInternalServerError)
				})
				f.endpoint(t, f.merchant, rc)
				f.settle(t, f.merchant, payment.StatusSuccess)
				d := f.onlyDelivery(t, f.merchant)
				for range tt.failFirst {
					wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID)
					if err != nil || wait == 0 {
						t.Fatalf("failing attempt: %v, %v", wait, err)
					}
					f.clock.Advance(wait)
				}

				var claimedAt []time.Time
				for crash := range tt.crashes {
					number := interrupted + crash
					doomedDB, err := store.Open(ctx, f.dbURL)
					if err != nil {
						t.Fatal(err)
					}
					doomed := webhook.NewService(webhook.Config{DB: doomedDB, Now: f.clock.Now, Logger: quietLog})
					died := make(chan error, 1)
					go func() {
						_, err := doomed.Attempt(ctx, f.merchant, d.ID)
						died <- err
					}()
					<-arrived
					claimedAt = append(claimedAt, f.clock.Now())
					// While the request is out, the history already shows it.
					got, err := f.app.Webhooks.Delivery(ctx, f.merchant, d.ID)
					if err != nil {
						t.Fatal(err)
					}
					if a := got.Attempts[len(got.Attempts)-1]; got.AttemptCount != number || len(got.Attempts) != number ||
						a.Number != number || !a.InProgress || a.Interrupted || !a.AttemptedAt.Equal(f.clock.Now()) {
						t.Fatalf("during the attempt: %d attempts counted, history %+v; want attempt %d in progress", got.AttemptCount, got.Attempts, number)
					}
					doomedDB.Close() // the kill: the outcome can no longer be written
					close(release[crash])
					if err := <-died; err == nil {
						t.Fatal("the killed process recorded its outcome")
					}

					// Within the lease the survivor leaves the attempt alone.
					f.clock.Advance(10 * time.Second)
					if wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID); err != nil || wait <= 0 || wait > time.Minute {
						t.Fatalf("run during the lease: %v, %v; want the rest of the lease", wait, err)
					}
					if n := len(rc.requests()); n != number {
						t.Fatalf("receiver saw %d requests during the lease, want %d", n, number)
					}
					// After it, even before the takeover, the attempt reads as interrupted.
					f.clock.Advance(time.Minute)
					got, _ = f.app.Webhooks.Delivery(ctx, f.merchant, d.ID)
					if a := got.Attempts[number-1]; !a.Interrupted || a.InProgress || a.Error != interruptedText || a.StatusCode != 0 || a.Succeeded {
						t.Fatalf("after the lease: %+v; want interrupted", a)
					}
				}

				wait, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID)
				if err != nil || wait != tt.wantWait {
					t.Fatalf("takeover: wait %v, err %v; want %v", wait, err, tt.wantWait)
				}
				reqs := rc.requests()
				if len(reqs) != tt.wantRequests {
					t.Fatalf("receiver saw %d requests, want %d", len(reqs), tt.wantRequests)
				}
				for _, r := range reqs {
					if r.header.Get("X-Service-Delivery-Id") != d.ID {
						t.Errorf("a request carried delivery id %q, want %s", r.header.Get("X-Service-Delivery-Id"), d.ID)
					}
				}

				// Delivery and Deliveries agree, and both list every attempt.
				one, err := f.app.Webhooks.Delivery(ctx, f.merchant, d.ID)
				if err != nil {
					t.Fatal(err)
				}
				list := f.onlyDelivery(t, f.merchant)
				for _, got := range []*webhook.Delivery{one, &list} {
					if got.State != tt.wantState || got.AttemptCount != len(got.Attempts) || len(got.Attempts) != tt.wantRequests {
						t.Fatalf("history: %s, %d counted, %d listed; want %s, %d", got.State, got.AttemptCount, len(got.Attempts), tt.wantState, tt.wantRequests)
					}
					for i, a := range got.Attempts {
						wantInterrupted := dies(i + 1)
						if a.Number != i+1 || a.Manual || a.Interrupted != wantInterrupted || a.InProgress ||
							(wantInterrupted && (a.Error != interruptedText || !a.AttemptedAt.Equal(claimedAt[i+1-interrupted]))) ||
							(!wantInterrupted && a.StatusCode != http.StatusInternalServerError) {
							t.Errorf("attempt %d: %+v (interrupted: %v)", i+1, a, wantInterrupted)
						}
					}
				}
				switch {
				case tt.wantState == webhook.StatePending && tt.crashes == 1:
					// The next attempt was made at once after the lease, and the
					// schedule goes on from it: attempt 3 is 5 min later.
					if at := one.Attempts[1].AttemptedAt; !one.NextAttemptAt.Equal(at.Add(5 * time.Minute)) {
						t.Errorf("next attempt at %v, want 5 min after %v", one.NextAttemptAt, at)
					}
				case tt.wantState == webhook.StatePending:
					// The takeover died too: attempt 3 is due 5 min after it
					// began, and is made then.
					if want := claimedAt[1].Add(5 * time.Minute); !one.NextAttemptAt.Equal(want) {
						t.Errorf("next attempt at %v, want %v", one.NextAttemptAt, want)
					}
					f.clock.Advance(wait)
					if _, err := f.app.Webhooks.Attempt(ctx, f.merchant, d.ID); err != nil || len(rc.requests()) != 3 {
						t.Errorf("when due: %v, receiver saw %d requests, want 3", err, len(rc.requests()))
					}
				}
			})
		}
	}
}
