package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// TestConcurrentRetriesOfRefusedPayment sends 16 concurrent creates with
// one reference, round after round, to a payer whose push the operator
// refuses (+23560000005), and in mixed rounds also to one whose push it
// takes. Every answer must be 201, 503 or a 409 naming a transaction that
// exists; never 500; and once no push was taken, the reference is free.
// Before pushes were marked in flight, duplicates read the refused row in
// the instant before it was deleted (409 naming an id that then gave 404)
// or after (500, "no rows in result set").
func TestConcurrentRetriesOfRefusedPayment(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clock := testserver.NewClock(time.Now())
		s := testserver.Start(t, testserver.Options{DB: engine, Now: clock.Now})
		const rounds, concurrent = 8, 16
		for round := range rounds {
			for _, mixed := range []bool{false, true} {
				// A merchant per round, so each round starts with a closed
				// circuit breaker (it still opens during the round).
				_, key := s.NewMerchant(t)
				ref := fmt.Sprintf("refused-%d-%v", round, mixed)
				answers := make([]response, concurrent)
				var wg sync.WaitGroup
				for i := range concurrent {
					phone := "+23560000005"
					if mixed && i%2 == 1 {
						phone = "+23566000000" // taken, stays PENDING
					}
					wg.Go(func() {
						answers[i] = do(t, s, "POST", "/v1/transactions", key,
							newPayment(map[string]any{"reference": ref, "phone_number": phone}))
					})
				}
				wg.Wait()

				var created string
				var conflicts []string
				for _, r := range answers {
					switch r.status {
					case http.StatusCreated:
						if created != "" {
							t.Fatalf("round %d: two 201s for one reference", round)
						}
						created = r.body["id"].(string)
					case http.StatusConflict:
						id, _ := r.errorField("existing_transaction_id").(string)
						conflicts = append(conflicts, id)
					case http.StatusServiceUnavailable:
						if r.errorField("code") != "GATEWAY_UNAVAILABLE" {
							t.Errorf("round %d: 503 %s", round, r.raw)
						}
					default:
						t.Errorf("round %d (mixed %v): %d %s", round, mixed, r.status, r.raw)
					}
				}
				for _, id := range conflicts {
					if id != created {
						t.Errorf("round %d (mixed %v): 409 names %q, the created one is %q", round, mixed, id, created)
					}
					if got := do(t, s, "GET", "/v1/transactions/"+id, key, nil); got.status != http.StatusOK || got.body["reference"] != ref {
						t.Errorf("round %d: the 409's transaction %s: %d %s", round, id, got.status, got.raw)
					}
				}
				if !mixed && created != "" {
					t.Errorf("round %d: a refused push was answered 201", round)
				}

				// The reference is free exactly when no row holds it (the
				// merchant is new this round, so its list is all there is).
				// Retrying it would meet this merchant's open circuit.
				list := do(t, s, "GET", "/v1/transactions", key, nil)
				total, _ := list.body["pagination"].(map[string]any)["total"].(float64)
				switch {
				case created == "" && total != 0:
					t.Errorf("round %d (mixed %v): no push was taken, yet %v transactions were kept: %s", round, mixed, total, list.raw)
				case created != "" && total != 1:
					t.Errorf("round %d: %v transactions kept after one 201: %s", round, total, list.raw)
				}
			}
		}
	})
}

// TestSandboxBreakerIsPerMerchant: one merchant's simulated outage opens
// only that merchant's circuit, and the 503 of an open circuit says so.
func TestSandboxBreakerIsPerMerchant(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		_, other := s.NewMerchant(t)
		for i := range 5 {
			r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23560000005"}))
			if r.status != http.StatusServiceUnavailable {
				t.Fatalf("refused push %d: %d %s", i, r.status, r.raw)
			}
			if msg, _ := r.errorField("message").(string); strings.Contains(msg, "stopped sending") {
				t.Errorf("refused push %d blames the circuit breaker, which was still closed: %s", i, msg)
			}
		}
		if r := do(t, s, "POST", "/v1/transactions", other, newPayment(map[string]any{"phone_number": "+23560000001"})); r.status != http.StatusCreated {
			t.Errorf("another merchant while the first one's circuit is open: %d %s", r.status, r.raw)
		}
		r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23560000001"}))
		if r.status != http.StatusServiceUnavailable || r.errorField("retry_after") != 30.0 {
			t.Fatalf("the merchant whose circuit is open: %d %s", r.status, r.raw)
		}
		want := "AIRTEL is temporarily unavailable: after repeated failures we stopped sending to it for 30 s; retry after 30 seconds"
		if msg, _ := r.errorField("message").(string); !strings.HasPrefix(msg, want) {
			t.Errorf("message %q, want it to start with %q", msg, want)
		}
	})
}

// TestPushLeftInFlightIsKept plays a process that died after inserting a
// transaction and before recording its push: the row stays marked in
// flight. It is not listed meanwhile; a duplicate create waits for it and,
// once the push has been in flight longer than any push can last, answers
// 409 naming it; from then on it is listed like any other, because the
// push may have reached the payer. The poller does the same for a row no
// duplicate ever meets.
func TestPushLeftInFlightIsKept(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		clock := testserver.NewClock(time.Now())
		s := testserver.Start(t, testserver.Options{DB: engine, Now: clock.Now})
		orphan := func(ref string) *payment.Transaction {
			now := clock.Now().UTC().Truncate(time.Microsecond)
			tr := &payment.Transaction{
				ID: uuid.Must(uuid.NewV7()).String(), MerchantID: s.MerchantID, Reference: ref,
				InternalRef: "SERVICE-" + strings.ToUpper(uuid.NewString()[:8]), Amount: 1500, Currency: "XAF",
				Operator: payment.OperatorAirtel, PhoneNumber: "+23566000000", Status: payment.StatusPending,
				CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(payment.DefaultPendingTTL), PushInFlight: true,
			}
			if err := s.App.Transactions.CreateTransaction(ctx, tr); err != nil {
				t.Fatal(err)
			}
			return tr
		}
		listed := func() float64 {
			r := do(t, s, "GET", "/v1/transactions", s.APIKey, nil)
			return r.body["pagination"].(map[string]any)["total"].(float64)
		}

		met, unmet := orphan(newRef()), orphan(newRef())
		if n := listed(); n != 0 {
			t.Fatalf("%v transactions listed while their pushes are in flight", n)
		}
		go func() {
			time.Sleep(300 * time.Millisecond)
			clock.Advance(21 * time.Second) // past the push timeout and its margin
		}()
		start := time.Now()
		r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"reference": met.Reference}))
		if r.status != http.StatusConflict || r.errorField("existing_transaction_id") != met.ID {
			t.Fatalf("duplicate of a push left in flight: %d %s", r.status, r.raw)
		}
		if waited := time.Since(start); waited < 250*time.Millisecond || waited > 5*time.Second {
			t.Errorf("the duplicate answered after %s; it should wait for the push to be judged taken", waited)
		}
		if got := do(t, s, "GET", "/v1/transactions/"+met.ID, s.APIKey, nil); got.status != http.StatusOK || got.body["status"] != "PENDING" {
			t.Errorf("GET of the kept transaction: %d %s", got.status, got.raw)
		}
		if _, err := s.App.Payments.Poll(ctx, s.MerchantID, unmet.ID); err != nil {
			t.Fatal(err)
		}
		if n := listed(); n != 2 {
			t.Errorf("%v transactions listed after their pushes were judged taken, want 2", n)
		}
	})
}
