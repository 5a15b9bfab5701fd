package webhook_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// TestPrune: pruning deletes the deliveries that are over (delivered,
// undelivered, test events) created before the cutoff and not changed
// since, with their attempts, a batch at a time; it keeps pending ones
// however old, one re-sent since the cutoff, newer ones, and another
// merchant's unless asked for every merchant; a dry run deletes nothing.
func TestPrune(t *testing.T) {
	defer webhook.SetPruneBatch(2)()
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		var up atomic.Bool
		up.Store(true)
		ok := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			if !up.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})
		failing := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		f.endpoint(t, f.merchant, ok)
		e2 := f.endpoint(t, f.merchant, failing)
		other := f.newMerchant(t)
		f.endpoint(t, other, newReceiver(t, nil))

		deliveries := func(merchant string) map[string]webhook.DeliveryState {
			t.Helper()
			ds, err := s.Deliveries(ctx, merchant, webhook.MaxDeliveryLimit)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]webhook.DeliveryState{}
			for _, d := range ds {
				out[d.ID] = d.State
			}
			return out
		}
		// attempt makes one attempt of each of merchant's pending
		// deliveries, rounds times, walking the clock to the next.
		attempt := func(merchant string, rounds int) {
			t.Helper()
			for range rounds {
				longest := time.Duration(0)
				for id, state := range deliveries(merchant) {
					if state == webhook.StatePending {
						wait, err := s.Attempt(ctx, merchant, id)
						if err != nil {
							t.Fatal(err)
						}
						longest = max(longest, wait)
					}
				}
				f.clock.Advance(longest)
			}
		}

		// The old history: two payments, each delivered to one endpoint
		// and undelivered to the other; a test event that failed; another
		// merchant's delivery; and a payment whose deliveries are still
		// pending after a first failed attempt.
		f.settle(t, f.merchant, payment.StatusSuccess)
		f.settle(t, f.merchant, payment.StatusFailed)
		attempt(f.merchant, webhook.MaxAttempts)
		if _, err := s.Test(ctx, f.merchant, e2.ID); err != nil {
			t.Fatal(err)
		}
		f.settle(t, other, payment.StatusSuccess)
		attempt(other, 1)
		up.Store(false)
		f.settle(t, f.merchant, payment.StatusSuccess)
		attempt(f.merchant, 1)
		old := deliveries(f.merchant)
		var over, pending []string
		for id, state := range old {
			if state == webhook.StatePending {
				pending = append(pending, id)
			} else {
				over = append(over, id)
			}
		}
		if len(over) != 5 || len(pending) != 2 {
			t.Fatalf("the old history: %v, want 5 over (2 delivered, 2 undelivered, a test event) and 2 pending", old)
		}
		cutoff := f.clock.Now().Add(time.Hour)

		// 40 days later, one of the old undelivered deliveries is re-sent
		// (and fails again), and a new payment's deliveries wait.
		f.clock.Advance(40 * 24 * time.Hour)
		var resent string
		for _, id := range over {
			if d, _ := s.Delivery(ctx, f.merchant, id); d.State == webhook.StateUndelivered && !d.Test && resent == "" {
				resent = id
			}
		}
		if _, err := s.Resend(ctx, f.merchant, resent); err != nil {
			t.Fatal(err)
		}
		f.settle(t, f.merchant, payment.StatusSuccess)
		kept := slices.Collect(maps.Keys(deliveries(f.merchant)))
		kept = slices.DeleteFunc(kept, func(id string) bool { return slices.Contains(over, id) && id != resent })
		gone := slices.DeleteFunc(slices.Clone(over), func(id string) bool { return id == resent })

		if n, err := s.Prune(ctx, f.merchant, cutoff, true); err != nil || n != len(gone) {
			t.Errorf("dry run: %d, %v; want %d", n, err, len(gone))
		}
		if got := deliveries(f.merchant); len(got) != len(kept)+len(gone) {
			t.Errorf("a dry run deleted deliveries: %d left of %d", len(got), len(kept)+len(gone))
		}
		if n, err := s.Prune(ctx, f.merchant, cutoff, false); err != nil || n != len(gone) {
			t.Errorf("prune: %d, %v; want %d", n, err, len(gone))
		}
		left := slices.Sorted(maps.Keys(deliveries(f.merchant)))
		if slices.Sort(kept); !slices.Equal(left, kept) {
			t.Errorf("deliveries left: %v, want %v (pending, re-sent and new ones)", left, kept)
		}
		for _, id := range gone {
			var n int
			if err := f.app.DB.QueryRow(`SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1`, id).Scan(&n); err != nil || n != 0 {
				t.Errorf("delivery %s was pruned but %d of its attempts are left (%v)", id, n, err)
			}
		}
		if n := len(deliveries(other)); n != 1 {
			t.Errorf("pruning one merchant left the other %d deliveries, want its 1", n)
		}
		if n, err := s.Prune(ctx, "", cutoff, false); err != nil || n != 1 {
			t.Errorf("prune every merchant: %d, %v; want the other merchant's 1", n, err)
		}
		if n, err := s.Prune(ctx, "", cutoff, false); err != nil || n != 0 {
			t.Errorf("prune again: %d, %v; want 0", n, err)
		}
	})
}
