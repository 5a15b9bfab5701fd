package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// waitStatus polls GET /v1/transactions/{id} until it shows want.
func waitStatus(t *testing.T, s *testserver.Server, key, id, want string, within time.Duration) response {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := do(t, s, "GET", "/v1/transactions/"+id, key, nil)
		if r.body["status"] == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction %s is %v after %s, want %s", id, r.body["status"], within, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSandboxLifecycle drives every scripted payer number of the sandbox
// through the HTTP API to its final state, on both engines.
func TestSandboxLifecycle(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ttl := 3 * time.Second
		s := testserver.Start(t, testserver.Options{DB: engine, PendingTTL: ttl})
		for _, c := range []struct {
			name, phone, want string
			within            time.Duration
		}{
			{"payer confirms", "+23560000001", "SUCCESS", 5 * time.Second},
			{"payer refuses", "+23560000002", "FAILED", 5 * time.Second},
			{"payer never answers", "+23560000003", "TIMEOUT", ttl + 10*time.Second},
			{"operator reports expiry", "+23560000004", "EXPIRED", ttl + 10*time.Second},
			{"callback lost, polling settles", "+23560000006", "SUCCESS", 15 * time.Second},
			{"unscripted number times out", "+23566123456", "TIMEOUT", ttl + 10*time.Second},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": c.phone}))
				if created.status != http.StatusCreated || created.body["status"] != "PENDING" {
					t.Fatalf("create: %d %s", created.status, created.raw)
				}
				final := waitStatus(t, s, s.APIKey, created.body["id"].(string), c.want, c.within)
				if final.body["updated_at"] == created.body["updated_at"] {
					t.Errorf("updated_at did not move: %v", final.body["updated_at"])
				}
				for _, same := range []string{"created_at", "expires_at", "amount", "reference", "internal_ref"} {
					if final.body[same] != created.body[same] {
						t.Errorf("%s changed from %v to %v", same, created.body[same], final.body[same])
					}
				}
				// Final states never change: still the same a while later.
				time.Sleep(500 * time.Millisecond)
				if again := do(t, s, "GET", "/v1/transactions/"+created.body["id"].(string), s.APIKey, nil); string(again.raw) != string(final.raw) {
					t.Errorf("final transaction changed: %s -> %s", final.raw, again.raw)
				}
			})
		}
	})
}

func TestOperatorUnavailable(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		body := newPayment(map[string]any{"reference": "outage-1", "phone_number": "+23560000005"})
		r := do(t, s, "POST", "/v1/transactions", s.APIKey, body)
		if r.status != http.StatusServiceUnavailable || r.errorField("code") != "GATEWAY_UNAVAILABLE" {
			t.Fatalf("got %d %s", r.status, r.raw)
		}
		if ra, _ := r.errorField("retry_after").(float64); ra < 1 || r.header.Get("Retry-After") == "" {
			t.Errorf("retry_after %v", r.errorField("retry_after"))
		}
		list := do(t, s, "GET", "/v1/transactions", s.APIKey, nil)
		if total := list.body["pagination"].(map[string]any)["total"]; total != 0.0 {
			t.Errorf("a refused payment was kept: total %v", total)
		}
		// The reference stays free: the merchant retries with it.
		body["phone_number"] = "+23560000001"
		if r := do(t, s, "POST", "/v1/transactions", s.APIKey, body); r.status != http.StatusCreated {
			t.Errorf("retry with the same reference: %d %s", r.status, r.raw)
		}
	})
}

// TestCircuitBreaker: after five refused pushes in a row the operator's
// circuit opens, and every push to it is refused at once until it closes.
func TestCircuitBreaker(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	for range 5 {
		do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23560000005", "operator": "MOOV"}))
	}
	r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23560000001", "operator": "MOOV"}))
	// 30 s, or 29 when the pushes (HTTP calls to the simulator) took over
	// a second on a loaded machine.
	if ra, _ := r.errorField("retry_after").(float64); r.status != http.StatusServiceUnavailable || ra < 29 || ra > 30 {
		t.Errorf("with the MOOV circuit open: %d %s", r.status, r.raw)
	}
	// Another operator is unaffected.
	if r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23560000001"})); r.status != http.StatusCreated {
		t.Errorf("AIRTEL while MOOV is open: %d %s", r.status, r.raw)
	}
}

// TestLateOutcome: an answer after a final state never changes the
// transaction; it becomes a reconciliation case.
func TestLateOutcome(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine, PendingTTL: time.Second})
		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23560000003"}))
		id := created.body["id"].(string)
		final := waitStatus(t, s, s.APIKey, id, "TIMEOUT", 10*time.Second)

		// The payer confirms after the TIMEOUT (the sandbox payer, by hand).
		got, changed, err := s.App.Payments.Settle(t.Context(), s.MerchantID, id, payment.StatusSuccess, payment.SourceSandbox, "late confirmation")
		if err != nil || changed || got.Status != payment.StatusTimeout {
			t.Fatalf("late settle: %v changed=%v status=%v", err, changed, got)
		}
		if again := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); string(again.raw) != string(final.raw) {
			t.Errorf("a late outcome changed the transaction: %s", again.raw)
		}
		cases, err := s.App.Cases.List(t.Context())
		if err != nil || len(cases) != 1 {
			t.Fatalf("cases %v %v, want 1", cases, err)
		}
		c := cases[0]
		if c.TransactionID != id || c.FinalStatus != payment.StatusTimeout || c.ReportedStatus != payment.StatusSuccess || c.MerchantID != s.MerchantID {
			t.Errorf("case %+v", c)
		}
		// The same outcome again is not a new discrepancy.
		s.App.Payments.Settle(t.Context(), s.MerchantID, id, payment.StatusTimeout, payment.SourcePoll, "")
		if cases, _ := s.App.Cases.List(t.Context()); len(cases) != 1 {
			t.Errorf("%d cases after a matching outcome, want 1", len(cases))
		}
	})
}
