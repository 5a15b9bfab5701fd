package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testlog"
	"github.com/momopay/momopay/internal/webhook"
)

// TestDispatcherKeepsEndpointsApart is the per-endpoint fairness: a
// merchant's endpoint that never answers, with a backlog older than
// everybody else's, holds no more than its bound of the workers, and
// another merchant's events go through meanwhile. Without the bound the
// backlog, first in line, takes every worker.
func TestDispatcherKeepsEndpointsApart(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		release := make(chan struct{})
		var held, most atomic.Int32
		slow := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			n := held.Add(1)
			defer held.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		f.endpoint(t, f.merchant, slow)
		for range 12 {
			f.settle(t, f.merchant, payment.StatusSuccess)
		}
		d := f.app.Webhooks.NewDispatcher(webhook.DispatchConfig{Workers: 4, PerEndpoint: 2, Poll: 10 * time.Millisecond})
		othersGetThrough(t, f, d, slow, release, "the endpoint that does not answer")
		d.Stop(ctx)
		if m := most.Load(); m != 2 {
			t.Errorf("at most %d attempts at once to one endpoint, want 2", m)
		}
	})
}

// TestDispatcherKeepsMerchantsApart is the per-merchant fairness: a
// merchant whose several endpoints never answer holds no more than its
// bound of the workers, whatever its number of endpoints, and another
// merchant's events go through meanwhile. Without the bound, three
// endpoints at their own bound of 2 took every one of the 4 workers.
func TestDispatcherKeepsMerchantsApart(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		release := make(chan struct{})
		slow := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		for i := range 3 {
			e, err := f.app.Webhooks.CreateEndpoint(ctx, f.merchant, fmt.Sprintf("%s/%d", slow.URL, i))
			if err != nil {
				t.Fatal(err)
			}
			slow.setSecret(e.Secret)
		}
		for range 4 {
			f.settle(t, f.merchant, payment.StatusSuccess) // 12 deliveries, 4 to each endpoint
		}
		d := f.app.Webhooks.NewDispatcher(webhook.DispatchConfig{Workers: 4, PerEndpoint: 2, PerMerchant: 2, Poll: 10 * time.Millisecond})
		othersGetThrough(t, f, d, slow, release, "the merchant whose endpoints do not answer")
	})
}

// othersGetThrough starts d on f.merchant's backlog of 12 deliveries to
// slow, which holds every attempt until release is closed, and checks
// that the backlog holds its bound of 2 attempts while another merchant's
// three events are delivered; then it lets the backlog through and waits
// for all 12 to be delivered. who names the backlog's side in a failure.
func othersGetThrough(t *testing.T, f *fixture, d *webhook.Dispatcher, slow *receiver, release chan struct{}, who string) {
	t.Helper()
	ctx := context.Background()
	d.Start(ctx)
	let := sync.OnceFunc(func() { close(release) })
	defer d.Stop(ctx)
	defer let()
	slow.waitFor(t, 2, 10*time.Second, nil)

	other := f.newMerchant(t)
	fast := newReceiver(t, nil)
	f.endpoint(t, other, fast)
	for range 3 {
		f.settle(t, other, payment.StatusFailed)
	}
	fast.waitFor(t, 3, 10*time.Second, nil)
	if n := len(slow.requests()); n != 2 {
		t.Fatalf("%s got %d attempts at once, want its bound of 2", who, n)
	}
	let()
	slow.waitFor(t, 12, 30*time.Second, nil)
	waitAllIn(t, f, f.merchant, 12, webhook.StateDelivered)
}

// TestSettlementWakesTheDispatcher: a delivery's first attempt starts when
// the settlement that queued it commits, the process's dispatcher woken by
// the store (AfterQueued): with the dispatcher polling once an hour, it
// still arrives, on both engines, and without a NOTIFY from the settling
// transaction (TestSettlementSendsNoNotify).
func TestSettlementWakesTheDispatcher(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		rc := newReceiver(t, nil)
		f.endpoint(t, f.merchant, rc)
		d := f.app.Webhooks.NewDispatcher(webhook.DispatchConfig{Poll: time.Hour})
		d.Start(context.Background())
		defer d.Stop(context.Background())
		// The dispatcher looks once as it starts (and as its listener
		// connects); let that pass, so that only the wake can start the
		// attempt.
		time.Sleep(500 * time.Millisecond)
		f.settle(t, f.merchant, payment.StatusSuccess)
		rc.waitFor(t, 1, 30*time.Second, nil)
	})
}

// TestBulkResendNotifies: a bulk re-send, which can make thousands of
// deliveries due at once, still tells every instance's dispatcher by
// LISTEN/NOTIFY (PostgreSQL): a dispatcher polling once an hour takes the
// deliveries another instance re-sent.
func TestBulkResendNotifies(t *testing.T) {
	t.Parallel()
	f := setup(t, "postgres")
	rc := newReceiver(t, nil)
	f.endpoint(t, f.merchant, rc)
	f.settle(t, f.merchant, payment.StatusSuccess)
	d := f.onlyDelivery(t, f.merchant)
	if _, err := f.app.DB.Exec(`UPDATE webhook_deliveries SET state = 'undelivered', next_attempt_at = NULL WHERE id = $1`, d.ID); err != nil {
		t.Fatal(err)
	}
	other := f.app.Webhooks.NewDispatcher(webhook.DispatchConfig{Poll: time.Hour})
	other.Start(context.Background())
	defer other.Stop(context.Background())
	time.Sleep(500 * time.Millisecond) // its first look, as it starts, is past
	// Another instance's re-send: only its NOTIFY reaches this dispatcher.
	peer := webhook.NewService(webhook.Config{DB: f.app.DB, Now: f.clock.Now})
	if r, err := peer.ResendUndelivered(context.Background(), f.merchant, f.clock.Now().Add(-time.Hour), ""); err != nil || r.Queued != 1 {
		t.Fatalf("bulk re-send: %+v, %v", r, err)
	}
	rc.waitFor(t, 1, 30*time.Second, nil)
}

// TestDispatcherTakesOverAfterTheLease plays a process killed during an
// attempt: the delivery is leased and its attempt left "sending". The
// dispatcher leaves it alone while the lease runs, then makes the next
// attempt, and the history shows the interrupted one.
func TestDispatcherTakesOverAfterTheLease(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		rc := newReceiver(t, nil)
		f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusSuccess)
		del := f.onlyDelivery(t, f.merchant)
		lease := f.clock.Now().Add(15 * time.Second)
		if _, err := f.app.DB.ExecContext(ctx, `UPDATE webhook_deliveries SET attempts = 1, lease_until = $1 WHERE id = $2`,
			f.app.DB.Time(lease), del.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.app.DB.ExecContext(ctx, `INSERT INTO webhook_attempts
			(id, merchant_id, delivery_id, number, manual, attempted_at, status_code, error, latency_ms, response_excerpt, stage)
			VALUES ($1, $2, $3, 1, FALSE, $4, NULL, '', 0, '', 'sending')`,
			"6f1c9a53-8c1d-4c59-9a34-5c3f3f7c2b10", f.merchant, del.ID, f.app.DB.Time(f.clock.Now())); err != nil {
			t.Fatal(err)
		}
		d := f.app.Webhooks.NewDispatcher(webhook.DispatchConfig{Poll: 10 * time.Millisecond})
		d.Start(ctx)
		defer d.Stop(ctx)
		time.Sleep(300 * time.Millisecond)
		if n := len(rc.requests()); n != 0 {
			t.Fatalf("%d attempts under a live lease", n)
		}
		f.clock.Advance(15 * time.Second)
		rc.waitFor(t, 1, 10*time.Second, nil)
		got := waitState(t, f.app, f.merchant, del.ID, webhook.StateDelivered)
		if len(got.Attempts) != 2 || !got.Attempts[0].Interrupted || !got.Attempts[1].Succeeded || got.Attempts[1].Number != 2 {
			t.Fatalf("history after the take-over: %+v", got.Attempts)
		}
	})
}

// TestDispatcherStopInterruptsAtTheDeadline: a stopping instance lets its
// attempts run until the grace ends, then cancels them; each records
// itself as interrupted and gives its delivery back at once, so another
// instance need not wait for the lease.
func TestDispatcherStopInterruptsAtTheDeadline(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		arrived := make(chan struct{}, 1)
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			<-r.Context().Done()
		})
		f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusSuccess)
		d := f.app.Webhooks.NewDispatcher(webhook.DispatchConfig{Poll: 10 * time.Millisecond})
		d.Start(context.Background())
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("no attempt started")
		}
		grace, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := d.Stop(grace); err == nil {
			t.Fatal("Stop returned nil with an attempt still running at its deadline")
		}
		got, _ := f.app.Webhooks.Delivery(context.Background(), f.merchant, f.onlyDelivery(t, f.merchant).ID)
		if got.State != webhook.StatePending || len(got.Attempts) != 1 || !got.Attempts[0].Interrupted {
			t.Fatalf("after the stop: %s, attempts %+v; want pending with one interrupted attempt", got.State, got.Attempts)
		}
		var leased int
		if err := f.app.DB.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE lease_until IS NOT NULL`).Scan(&leased); err != nil || leased != 0 {
			t.Fatalf("%d deliveries still leased (%v)", leased, err)
		}
	})
}

// TestTwoDispatchersSendEachOnce plays two instances: two dispatchers look
// at the same due deliveries at the same time, and the claim lets only one
// of them send each. Every delivery arrives once, with one attempt in its
// history.
func TestTwoDispatchersSendEachOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		rc := newReceiver(t, nil)
		f.endpointAt(t, f.merchant, rc, "/a")
		f.endpointAt(t, f.merchant, rc, "/b")
		for range 20 {
			f.settle(t, f.merchant, payment.StatusSuccess)
		}
		for range 2 {
			d := f.app.Webhooks.NewDispatcher(webhook.DispatchConfig{Workers: 8, Poll: 10 * time.Millisecond})
			d.Start(ctx)
			defer d.Stop(ctx)
		}
		rc.waitFor(t, 40, 30*time.Second, nil)
		waitAllIn(t, f, f.merchant, 40, webhook.StateDelivered)
		seen := map[string]int{}
		for _, r := range rc.requests() {
			seen[r.header.Get("X-Service-Delivery-Id")]++
		}
		ds, _ := f.app.Webhooks.Deliveries(ctx, f.merchant, 0)
		for _, d := range ds {
			if seen[d.ID] != 1 || d.AttemptCount != 1 {
				t.Errorf("delivery %s: received %d times, %d attempts; want 1 and 1", d.ID, seen[d.ID], d.AttemptCount)
			}
		}
	})
}

// waitAllIn waits until merchant has want deliveries, all in state.
func waitAllIn(t *testing.T, f *fixture, merchant string, want int, state webhook.DeliveryState) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := f.app.Webhooks.Deliveries(context.Background(), merchant, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, d := range ds {
			if d.State == state {
				n++
			}
		}
		if n == want && len(ds) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries %s after 30 s", n, len(ds), state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSettlementSendsNoNotify: the settling transaction sends no NOTIFY on
// the dispatchers' channel (PostgreSQL). A NOTIFY holds the database's
// global notification lock through its transaction's commit and flush, so
// settlements that each sent one committed one at a time.
func TestSettlementSendsNoNotify(t *testing.T) {
	t.Parallel()
	f := setup(t, "postgres")
	f.endpoint(t, f.merchant, newReceiver(t, nil))
	ctx := context.Background()
	pool, err := f.app.DB.OpenPool(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after Listen's connection is given back
	heard := testdb.Listen(t, pool, "momopay_webhooks_due")
	f.settle(t, f.merchant, payment.StatusSuccess)
	f.onlyDelivery(t, f.merchant) // it queued a delivery
	if n := heard(time.Second); n != 0 {
		t.Errorf("the settlement sent %d NOTIFY on momopay_webhooks_due, want none", n)
	}
}

// TestDispatcherErrorsLogOnceASecond: while every attempt fails on our
// side (here a trigger refuses each claim, as a database that cannot
// write would), the dispatcher logs one line a second, counting the
// failures it held back, rather than one per delivery per retry; and once
// the database writes again, every delivery goes through.
func TestDispatcherErrorsLogOnceASecond(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		rc := newReceiver(t, nil)
		f.endpoint(t, f.merchant, rc)
		const deliveries = 30
		for range deliveries {
			f.settle(t, f.merchant, payment.StatusSuccess)
		}
		refuse, allow := `CREATE TRIGGER refuse_claims BEFORE UPDATE ON webhook_deliveries
			BEGIN SELECT RAISE(ABORT, 'injected: the database cannot write'); END`, `DROP TRIGGER refuse_claims`
		if f.app.DB.Dialect == store.Postgres {
			refuse = `CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN RAISE EXCEPTION 'injected: the database cannot write'; END $$;
				CREATE TRIGGER refuse_claims BEFORE UPDATE ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION refuse_claims()`
			allow = `DROP TRIGGER refuse_claims ON webhook_deliveries`
		}
		if _, err := f.app.DB.Exec(refuse); err != nil {
			t.Fatal(err)
		}
		var logged testlog.Buffer
		s := webhook.NewService(webhook.Config{DB: f.app.DB, Now: f.clock.Now, Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
		d := s.NewDispatcher(webhook.DispatchConfig{Workers: deliveries, PerEndpoint: deliveries, PerMerchant: deliveries, Poll: 10 * time.Millisecond})
		start := time.Now()
		d.Start(ctx)
		defer d.Stop(ctx)
		// Each delivery fails, pauses a second and fails again: wait until
		// the lines account for every first attempt.
		var lines []errorLine
		held := 0
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			lines, held = errorLines(t, logged.String()), 0
			for _, l := range lines {
				held += l.Held
			}
			if len(lines)+held >= deliveries || time.Now().After(deadline) {
				break
			}
		}
		elapsed := time.Since(start)
		if len(lines)+held < deliveries {
			t.Fatalf("%d lines counting %d held back failures in %v, want at least the %d first attempts", len(lines), held, elapsed, deliveries)
		}
		// One line a second at most: the first at once, then one a
		// second, each counting the failures held back since the last.
		if max := int(elapsed/time.Second) + 1; len(lines) > max {
			t.Fatalf("%d error lines in %v, want at most %d", len(lines), elapsed, max)
		}
		if len(rc.requests()) != 0 {
			t.Fatalf("%d deliveries sent while no claim could be written", len(rc.requests()))
		}
		if _, err := f.app.DB.Exec(allow); err != nil {
			t.Fatal(err)
		}
		rc.waitFor(t, deliveries, 30*time.Second, nil)
		waitAllIn(t, f, f.merchant, deliveries, webhook.StateDelivered)
	})
}

// errorLine is one of the dispatcher's lines about an attempt stopped by
// an error of ours.
type errorLine struct {
	Msg  string `json:"msg"`
	Held int    `json:"also_failed_since_last_line"`
}

// errorLines picks those lines out of the JSON log.
func errorLines(t *testing.T, log string) []errorLine {
	t.Helper()
	var out []errorLine
	for _, raw := range strings.Split(log, "\n") {
		var l errorLine
		if len(raw) == 0 {
			continue
		}
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		if strings.HasPrefix(l.Msg, "webhook attempt stopped by an error on our side") {
			out = append(out, l)
		}
	}
	return out
}
