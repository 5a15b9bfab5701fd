package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator/airtel/airtelsim"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testlog"
	"github.com/momopay/momopay/internal/testserver"
)

// postCallback posts body to path; hash, when set, goes in Airtel's Hash
// header (the body's own hash field is the other place Airtel puts it).
func postCallback(t *testing.T, s *testserver.Server, path string, body []byte, hash string) response {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if hash != "" {
		req.Header.Set("Hash", hash)
	}
	return send(t, req)
}

// TestOperatorCallbacks plays Airtel posting callbacks to
// /callbacks/airtel: only an authentic one about a known payment settles
// it; a forged one is refused, and so is one without a hash, since the
// sandbox's Airtel signs its callbacks as Airtel does once callback
// authentication is on (unsigned hints, when no secret is configured, are
// app's TestUnverifiedCallbacks*).
func TestOperatorCallbacks(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	secret := s.App.SandboxCallbackSecret
	created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23566112233"}))
	id, ref := created.body["id"].(string), created.body["internal_ref"].(string)

	body := airtelsim.SignedCallback(secret, ref, "TF", "balance too low", "AM0001")
	forged := airtelsim.SignedCallback([]byte("not the secret"), ref, "TS", "paid", "AM0001")
	unsigned := airtelsim.SignedCallback(nil, ref, "TS", "paid", "AM0001")

	for _, c := range []struct {
		name, path string
		body       []byte
		status     int
	}{
		{"unsigned, with a secret configured", "/callbacks/airtel", unsigned, 401},
		{"signed with another secret", "/callbacks/airtel", forged, 401},
		{"body changed after signing", "/callbacks/airtel", bytes.Replace(body, []byte(`"TF"`), []byte(`"TS"`), 1), 401},
		{"not Airtel's shape", "/callbacks/airtel", []byte(`{"status":"TS"}`), 401},
		{"operator without callbacks", "/callbacks/mtn", body, 404},
		{"wrong method", "/callbacks/airtel", nil, 405},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r response
			if c.status == 405 {
				r = do(t, s, "GET", c.path, "", nil)
			} else {
				r = postCallback(t, s, c.path, c.body, "")
			}
			if r.status != c.status {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, c.status)
			}
			if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); got.body["status"] != "PENDING" {
				t.Fatalf("a refused or unverified callback settled the payment: %s", got.raw)
			}
		})
	}

	// An in-progress report changes nothing; an unknown payment is 404.
	progress := airtelsim.SignedCallback(secret, ref, "TIP", "in progress", "")
	if r := postCallback(t, s, "/callbacks/airtel", progress, ""); r.status != 200 {
		t.Errorf("in-progress callback: %d %s", r.status, r.raw)
	}
	unknown := airtelsim.SignedCallback(secret, "SERVICE-NOSUCH00", "TF", "", "")
	if r := postCallback(t, s, "/callbacks/airtel", unknown, ""); r.status != 404 {
		t.Errorf("callback for an unknown payment: %d %s", r.status, r.raw)
	}

	// The authentic callback settles it, once.
	if r := postCallback(t, s, "/callbacks/airtel", body, ""); r.status != 200 {
		t.Fatalf("authentic callback: %d %s", r.status, r.raw)
	}
	if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); got.body["status"] != "FAILED" {
		t.Fatalf("after the callback: %s", got.raw)
	}
	if r := postCallback(t, s, "/callbacks/airtel", body, ""); r.status != 200 {
		t.Errorf("a repeated callback: %d %s", r.status, r.raw)
	}
	if cases, _ := s.App.Cases.List(t.Context()); len(cases) != 0 {
		t.Errorf("a repeated identical callback made reconciliation cases: %v", cases)
	}
	// The operator's reference is kept with the transaction, not shown.
	tx, err := s.App.Transactions.Transaction(t.Context(), s.MerchantID, id)
	if err != nil || tx.OperatorRef != "AM0001" || tx.FailureReason != "other" {
		t.Errorf("kept: ref %q reason %q (%v), want AM0001 and other", tx.OperatorRef, tx.FailureReason, err)
	}
	if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); bytes.Contains([]byte(got.raw), []byte("AM0001")) {
		t.Errorf("the operator's reference leaked into /v1: %s", got.raw)
	}
}

// TestRejectedCallbacksLoggedSparingly: anyone can post forged callbacks;
// a flood of them writes a warning at most once a second, not one each.
func TestRejectedCallbacksLoggedSparingly(t *testing.T) {
	var logs testlog.Buffer
	s := testserver.Start(t, testserver.Options{Log: &logs})
	forged := airtelsim.SignedCallback([]byte("not the secret"), "SERVICE-ABCDEFGH", "TS", "paid", "AM1")
	start := time.Now()
	for range 50 {
		if r := postCallback(t, s, "/callbacks/airtel", forged, ""); r.status != 401 {
			t.Fatalf("forged callback: %d", r.status)
		}
	}
	allowed := 1 + int(time.Since(start)/time.Second)
	if n := strings.Count(logs.String(), "operator callback rejected"); n < 1 || n > allowed {
		t.Errorf("50 forged callbacks wrote %d warnings, want 1 to %d", n, allowed)
	}
}

// TestCallbackAboutNoSuchRef: a callback naming a reference that is no
// internal_ref at all (a NUL in it, which PostgreSQL cannot even compare)
// is an unknown payment, 404, on both engines.
func TestCallbackAboutNoSuchRef(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		for _, ref := range []string{"SERVICE-\x00", "SERVICE-AB\x00CDEFG", "service-abcdefgh", "SERVICE-ABCDEFGHI"} {
			if r := postCallback(t, s, "/callbacks/airtel", airtelsim.SignedCallback(s.App.SandboxCallbackSecret, ref, "TS", "paid", "AM1"), ""); r.status != 404 {
				t.Errorf("%q: %d %s, want 404", ref, r.status, r.raw)
			}
			// Unsigned, it is refused before anything is looked up.
			if r := postCallback(t, s, "/callbacks/airtel", airtelsim.SignedCallback(nil, ref, "TS", "paid", "AM1"), ""); r.status != 401 {
				t.Errorf("%q unsigned: %d %s, want 401", ref, r.status, r.raw)
			}
		}
	})
}

// TestCallbackSettlesOnlyItsOperatorsPayment: a validly signed callback on
// /callbacks/airtel about a MOOV payment is answered 404, like an unknown
// reference, and changes nothing; Moov has no callbacks at all.
func TestCallbackSettlesOnlyItsOperatorsPayment(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"operator": "MOOV", "phone_number": "+23566112233"}))
		if created.status != 201 {
			t.Fatalf("create: %d %s", created.status, created.raw)
		}
		id, ref := created.body["id"].(string), created.body["internal_ref"].(string)
		for _, state := range []string{"TS", "TF", "TE", "TIP"} {
			body := airtelsim.SignedCallback(s.App.SandboxCallbackSecret, ref, state, "", "AM1")
			if r := postCallback(t, s, "/callbacks/airtel", body, ""); r.status != 404 || r.errorField("code") != "NOT_FOUND" {
				t.Errorf("AIRTEL callback %s about a MOOV payment: %d %s", state, r.status, r.raw)
			}
		}
		if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); got.body["status"] != "PENDING" {
			t.Fatalf("another operator's callback settled the payment: %s", got.raw)
		}
		if cases, _ := s.App.Cases.List(t.Context()); len(cases) != 0 {
			t.Errorf("another operator's callback made reconciliation cases: %v", cases)
		}
		// Moov sends no callbacks: nothing is read there.
		body := airtelsim.SignedCallback(s.App.SandboxCallbackSecret, ref, "TS", "", "AM1")
		if r := postCallback(t, s, "/callbacks/moov", body, ""); r.status != 404 {
			t.Fatalf("a callback on /callbacks/moov: %d %s", r.status, r.raw)
		}
		if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); got.body["status"] != "PENDING" {
			t.Errorf("after a callback on /callbacks/moov: %s", got.raw)
		}
	})
}

// TestEarlyExpiredIsHeld: an operator saying "expired" before expires_at
// changes nothing, by callback or any other path; from expires_at on, the
// same report sets EXPIRED.
func TestEarlyExpiredIsHeld(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clock := testserver.NewClock(time.Now())
		s := testserver.Start(t, testserver.Options{DB: engine, Now: clock.Now})
		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23560000004"}))
		if created.status != 201 {
			t.Fatalf("create: %d %s", created.status, created.raw)
		}
		id, ref := created.body["id"].(string), created.body["internal_ref"].(string)
		body := airtelsim.SignedCallback(s.App.SandboxCallbackSecret, ref, "TE", "transaction expired", "AM1")

		// 55 s before expires_at, as the issue saw it.
		clock.Advance(payment.DefaultPendingTTL - 55*time.Second)
		if r := postCallback(t, s, "/callbacks/airtel", body, ""); r.status != 200 {
			t.Fatalf("early TE callback: %d %s", r.status, r.raw)
		}
		_, changed, err := s.App.Payments.Settle(t.Context(), s.MerchantID, id, payment.StatusExpired, payment.SourceSandbox, "early")
		if err != nil || changed {
			t.Errorf("early EXPIRED through Settle: changed=%v err=%v", changed, err)
		}
		if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); got.body["status"] != "PENDING" || got.body["updated_at"] != created.body["updated_at"] {
			t.Fatalf("an early expiry report changed the payment: %s", got.raw)
		}
		if cases, _ := s.App.Cases.List(t.Context()); len(cases) != 0 {
			t.Errorf("an early expiry report made reconciliation cases: %v", cases)
		}

		clock.Advance(55 * time.Second) // exactly expires_at
		if r := postCallback(t, s, "/callbacks/airtel", body, ""); r.status != 200 {
			t.Fatalf("TE callback at expires_at: %d %s", r.status, r.raw)
		}
		got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil)
		if got.body["status"] != "EXPIRED" || got.body["updated_at"] != got.body["expires_at"] {
			t.Errorf("TE callback at expires_at: %s", got.raw)
		}
	})
}

// TestCallbacksOutOfOrder: Airtel's callbacks arriving out of order or
// after a final state go through the one transition: the first outcome
// stays, a contradicting one becomes a reconciliation case.
func TestCallbacksOutOfOrder(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clock := testserver.NewClock(time.Now())
		s := testserver.Start(t, testserver.Options{DB: engine, Now: clock.Now})
		secret := s.App.SandboxCallbackSecret
		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23566112233"}))
		id, ref := created.body["id"].(string), created.body["internal_ref"].(string)
		for i, c := range []struct{ code, want string }{{"TS", "SUCCESS"}, {"TF", "SUCCESS"}, {"TIP", "SUCCESS"}, {"TS", "SUCCESS"}} {
			if r := postCallback(t, s, "/callbacks/airtel", airtelsim.SignedCallback(secret, ref, c.code, "", "AM42"), ""); r.status != 200 {
				t.Fatalf("callback %d (%s): %d %s", i, c.code, r.status, r.raw)
			}
			if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); got.body["status"] != c.want {
				t.Fatalf("after callback %d (%s): %s", i, c.code, got.raw)
			}
		}
		cases, _ := s.App.Cases.List(t.Context())
		if len(cases) != 1 || cases[0].ReportedStatus != payment.StatusFailed || cases[0].FinalStatus != payment.StatusSuccess {
			t.Errorf("cases: %+v, want the one late FAILED", cases)
		}

	})
}

// TestFailedCallbackAskedAbout: Airtel's TF callback has no failure code;
// the service completes it from the enquiry, so the reason kept is the
// payer's (here "not enough balance" of the …02 payer). When the enquiry
// says TS instead (callbacks out of order; the …01 payer paid), the
// operator's ledger wins: SUCCESS.
func TestFailedCallbackAskedAbout(t *testing.T) {
	for _, c := range []struct{ payer, status, reason, code string }{
		{"+23560000002", "FAILED", "insufficient_balance", "DP00800001007"},
		{"+23560000001", "SUCCESS", "", ""},
	} {
		clock := testserver.NewClock(time.Now())
		s := testserver.Start(t, testserver.Options{Now: clock.Now})
		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": c.payer}))
		id, ref := created.body["id"].(string), created.body["internal_ref"].(string)
		clock.Advance(2 * time.Second)
		if r := postCallback(t, s, "/callbacks/airtel", airtelsim.SignedCallback(s.App.SandboxCallbackSecret, ref, "TF", "failed", "AM7"), ""); r.status != 200 {
			t.Fatalf("callback: %d %s", r.status, r.raw)
		}
		tx, err := s.App.Transactions.Transaction(t.Context(), s.MerchantID, id)
		if err != nil || string(tx.Status) != c.status || tx.FailureReason != c.reason || tx.OperatorCode != c.code && c.code != "" {
			t.Errorf("payer %s: kept %+v (%v), want %s %q %q", c.payer, tx, err, c.status, c.reason, c.code)
		}
	}
}
