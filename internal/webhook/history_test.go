package webhook_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// ids lists the ids of ds in order.
func ids(ds []webhook.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// TestHistory: the history filters by state, event, endpoint and
// transaction, pages newest first without overlap, refuses malformed
// filters, and never shows another merchant's deliveries.
func TestHistory(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		ok := newReceiver(t, nil)
		down := newReceiver(t, statuses(500))
		eOK := f.endpointAt(t, f.merchant, ok, "/ok")
		eDown := f.endpointAt(t, f.merchant, down, "/down")

		// Three settled payments: two endpoints each, so six deliveries.
		var txs []*payment.Transaction
		for _, to := range []payment.Status{payment.StatusSuccess, payment.StatusFailed, payment.StatusSuccess} {
			txs = append(txs, f.settle(t, f.merchant, to))
		}
		all, err := s.History(ctx, f.merchant, webhook.DeliveryFilter{})
		if err != nil || len(all.Deliveries) != 6 || all.Next != "" {
			t.Fatalf("whole history: %d deliveries, next %q, %v", len(all.Deliveries), all.Next, err)
		}
		// The receiver that is up gets its three; the one that is down fails.
		for _, d := range all.Deliveries {
			if _, err := s.Attempt(ctx, f.merchant, d.ID); err != nil {
				t.Fatal(err)
			}
		}
		other := f.newMerchant(t)
		f.endpoint(t, other, newReceiver(t, nil))
		f.settle(t, other, payment.StatusSuccess)

		count := func(filter webhook.DeliveryFilter) []webhook.Delivery {
			t.Helper()
			p, err := s.History(ctx, f.merchant, filter)
			if err != nil {
				t.Fatalf("%+v: %v", filter, err)
			}
			for _, d := range p.Deliveries {
				if len(d.Attempts) != d.AttemptCount {
					t.Errorf("delivery %s lists %d attempts, counts %d", d.ID, len(d.Attempts), d.AttemptCount)
				}
			}
			return p.Deliveries
		}
		tests := []struct {
			name   string
			filter webhook.DeliveryFilter
			want   int
		}{
			{"delivered", webhook.DeliveryFilter{State: webhook.StateDelivered}, 3},
			{"pending (failed once, retrying)", webhook.DeliveryFilter{State: webhook.StatePending}, 3},
			{"undelivered", webhook.DeliveryFilter{State: webhook.StateUndelivered}, 0},
			{"event", webhook.DeliveryFilter{Event: "transaction.failed"}, 2},
			{"endpoint", webhook.DeliveryFilter{EndpointID: eDown.ID}, 3},
			{"endpoint and state", webhook.DeliveryFilter{EndpointID: eOK.ID, State: webhook.StateDelivered}, 3},
			{"transaction", webhook.DeliveryFilter{TransactionID: txs[1].ID}, 2},
			{"transaction and endpoint", webhook.DeliveryFilter{TransactionID: txs[1].ID, EndpointID: eOK.ID}, 1},
			{"unknown transaction", webhook.DeliveryFilter{TransactionID: uuid.NewString()}, 0},
		}
		for _, tc := range tests {
			if got := count(tc.filter); len(got) != tc.want {
				t.Errorf("%s: %d deliveries, want %d", tc.name, len(got), tc.want)
			}
		}

		// Pages of 4 then 2, newest first, same order as the whole list.
		p1, err := s.History(ctx, f.merchant, webhook.DeliveryFilter{Limit: 4})
		if err != nil || len(p1.Deliveries) != 4 || p1.Next != p1.Deliveries[3].ID {
			t.Fatalf("page 1: %d, next %q, %v", len(p1.Deliveries), p1.Next, err)
		}
		p2, err := s.History(ctx, f.merchant, webhook.DeliveryFilter{Limit: 4, After: p1.Next})
		if err != nil || len(p2.Deliveries) != 2 || p2.Next != "" {
			t.Fatalf("page 2: %d, next %q, %v", len(p2.Deliveries), p2.Next, err)
		}
		if got := append(ids(p1.Deliveries), ids(p2.Deliveries)...); !slices.Equal(got, ids(all.Deliveries)) {
			t.Errorf("pages %v differ from the whole list %v", got, ids(all.Deliveries))
		}

		// Another merchant's ids select nothing of theirs.
		theirs, _ := s.History(ctx, other, webhook.DeliveryFilter{})
		if len(theirs.Deliveries) != 1 {
			t.Fatalf("other merchant has %d deliveries", len(theirs.Deliveries))
		}
		if got := count(webhook.DeliveryFilter{TransactionID: theirs.Deliveries[0].TransactionID}); len(got) != 0 {
			t.Errorf("another merchant's transaction id listed %d deliveries", len(got))
		}
		if p, _ := s.History(ctx, f.merchant, webhook.DeliveryFilter{After: theirs.Deliveries[0].ID}); len(p.Deliveries) != 0 {
			t.Errorf("another merchant's delivery as a cursor listed %d deliveries", len(p.Deliveries))
		}

		for _, bad := range []webhook.DeliveryFilter{
			{State: "lost"}, {Event: "transaction.expired"}, {EndpointID: "x"}, {TransactionID: "1"}, {After: "'"}, {Limit: 101}, {Limit: -1},
		} {
			if _, err := s.History(ctx, f.merchant, bad); code(err) != payment.EINVALID {
				t.Errorf("filter %+v: %v, want invalid", bad, err)
			}
		}
	})
}

// TestResendUndelivered: a merchant whose receiver was down re-sends every
// undelivered delivery since a time in one request. Only their own,
// undelivered, non-test deliveries of enabled endpoints from that time on
// are queued; each gets one manual attempt through its job; asking again
// while they are queued, or after, queues nothing twice.
func TestResendUndelivered(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		up := false
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			if !up {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})
		e := f.endpoint(t, f.merchant, rc)
		disabled := f.endpointAt(t, f.merchant, rc, "/disabled")

		undeliver := func(d webhook.Delivery) {
			t.Helper()
			for range webhook.MaxAttempts {
				wait, err := s.Attempt(ctx, f.merchant, d.ID)
				if err != nil {
					t.Fatal(err)
				}
				f.clock.Advance(wait)
			}
			if got, _ := s.Delivery(ctx, f.merchant, d.ID); got.State != webhook.StateUndelivered {
				t.Fatalf("delivery %s is %s after 5 failures", d.ID, got.State)
			}
		}
		byEndpoint := func(tr *payment.Transaction, endpointID string) webhook.Delivery {
			t.Helper()
			p, err := s.History(ctx, f.merchant, webhook.DeliveryFilter{TransactionID: tr.ID, EndpointID: endpointID})
			if err != nil || len(p.Deliveries) != 1 {
				t.Fatalf("delivery of %s to %s: %v %v", tr.ID, endpointID, p, err)
			}
			return p.Deliveries[0]
		}

		before := byEndpoint(f.settle(t, f.merchant, payment.StatusSuccess), e.ID)
		undeliver(before)
		since := f.clock.Now()
		f.clock.Advance(time.Minute)
		var after []webhook.Delivery
		var onDisabled webhook.Delivery
		for range 2 {
			tr := f.settle(t, f.merchant, payment.StatusFailed)
			d := byEndpoint(tr, e.ID)
			undeliver(d)
			after = append(after, d)
			onDisabled = byEndpoint(tr, disabled.ID)
			undeliver(onDisabled)
		}
		if _, err := s.SetEndpointEnabled(ctx, f.merchant, disabled.ID, false); err != nil {
			t.Fatal(err)
		}
		// Still retrying on its schedule: not touched.
		retrying := byEndpoint(f.settle(t, f.merchant, payment.StatusSuccess), e.ID)
		if _, err := s.Attempt(ctx, f.merchant, retrying.ID); err != nil {
			t.Fatal(err)
		}
		// A failed test event: never re-sent.
		if _, err := s.Test(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}
		// Another merchant's undelivered delivery.
		other := f.newMerchant(t)
		otherRC := newReceiver(t, statuses(500))
		f.endpoint(t, other, otherRC)
		f.settle(t, other, payment.StatusSuccess)
		theirs := f.app.Webhooks
		ds, _ := theirs.Deliveries(ctx, other, 0)
		for range webhook.MaxAttempts {
			wait, _ := s.Attempt(ctx, other, ds[0].ID)
			f.clock.Advance(wait)
		}
		sent := len(rc.requests())

		got, err := s.ResendUndelivered(ctx, f.merchant, since, "")
		if err != nil || got.Queued != 2 || got.More || got.Disabled != 2 {
			t.Fatalf("re-send since: %+v %v; want 2 queued, and the 2 of the disabled endpoint counted", got, err)
		}
		again, err := s.ResendUndelivered(ctx, f.merchant, since, "")
		if err != nil || again.Queued != 0 {
			t.Fatalf("asking again while queued: %+v %v; want none", again, err)
		}
		for _, d := range after {
			q, _ := s.Delivery(ctx, f.merchant, d.ID)
			if q.State != webhook.StatePending || !q.ResendRequested {
				t.Errorf("queued delivery %s: %s, requested %v", d.ID, q.State, q.ResendRequested)
			}
		}
		for _, d := range []webhook.Delivery{before, onDisabled} {
			if q, _ := s.Delivery(ctx, f.merchant, d.ID); q.State != webhook.StateUndelivered || q.ResendRequested {
				t.Errorf("delivery %s was queued: %s", d.ID, q.State)
			}
		}
		if q, _ := s.Delivery(ctx, other, ds[0].ID); q.State != webhook.StateUndelivered {
			t.Errorf("another merchant's delivery was queued: %s", q.State)
		}

		// The receiver is back; the queued jobs run (here by hand).
		up = true
		for _, d := range after {
			if wait, err := s.Attempt(ctx, f.merchant, d.ID); err != nil || wait != 0 {
				t.Fatalf("queued attempt: %v %v", wait, err)
			}
			q, _ := s.Delivery(ctx, f.merchant, d.ID)
			last := q.Attempts[len(q.Attempts)-1]
			if q.State != webhook.StateDelivered || q.ResendRequested || q.AttemptCount != webhook.MaxAttempts+1 || !last.Manual || !last.Succeeded {
				t.Errorf("after the re-send: %s, %d attempts, last %+v", q.State, q.AttemptCount, last)
			}
			// Its job running again sends nothing.
			if wait, err := s.Attempt(ctx, f.merchant, d.ID); err != nil || wait != 0 {
				t.Fatalf("second run: %v %v", wait, err)
			}
		}
		if n := len(rc.requests()) - sent; n != 2 {
			t.Errorf("the re-send made %d requests, want 2", n)
		}
		if again, _ := s.ResendUndelivered(ctx, f.merchant, since, ""); again.Queued != 0 {
			t.Errorf("asking after delivery queued %d", again.Queued)
		}

		// A failed queued attempt leaves the delivery undelivered, to be
		// asked for again; one endpoint only when named.
		up = false
		got, err = s.ResendUndelivered(ctx, f.merchant, time.Time{}, e.ID)
		if err != nil || got.Queued != 1 || got.Disabled != 0 {
			t.Fatalf("re-send of all time for one endpoint: %+v %v; want only the oldest", got, err)
		}
		if _, err := s.Attempt(ctx, f.merchant, before.ID); err != nil {
			t.Fatal(err)
		}
		if q, _ := s.Delivery(ctx, f.merchant, before.ID); q.State != webhook.StateUndelivered || q.ResendRequested || q.NextAttemptAt != nil {
			t.Errorf("after a failed re-send: %s, requested %v, next %v", q.State, q.ResendRequested, q.NextAttemptAt)
		}
		if _, err := s.ResendUndelivered(ctx, f.merchant, since, "nope"); code(err) != payment.EINVALID {
			t.Errorf("malformed endpoint: %v", err)
		}
	})
}
