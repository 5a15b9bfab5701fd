package api_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/sandbox"
	"github.com/momopay/momopay/internal/testserver"
)

func postCallback(t *testing.T, s *testserver.Server, path string, body []byte, signature string) response {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set(sandbox.SignatureHeader, signature)
	}
	return send(t, req)
}

// TestOperatorCallbacks plays the operator posting callbacks to
// /callbacks/{operator}: only an authentic one about a known payment
// settles it.
func TestOperatorCallbacks(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	secret := s.App.SandboxCallbackSecret
	created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23566112233"}))
	id, ref := created.body["id"].(string), created.body["internal_ref"].(string)

	failed := operator.Outcome{State: operator.Failed, Detail: "TF: balance too low"}
	body, sig := sandbox.SignedCallback(secret, ref, failed)
	forged, forgedSig := sandbox.SignedCallback([]byte("not the secret"), ref, operator.Outcome{State: operator.Succeeded})

	for _, c := range []struct {
		name, path string
		body       []byte
		sig        string
		status     int
	}{
		{"unsigned", "/callbacks/airtel", body, "", 401},
		{"signed with another secret", "/callbacks/airtel", forged, forgedSig, 401},
		{"body changed after signing", "/callbacks/airtel", bytes.Replace(body, []byte(`"TF"`), []byte(`"TS"`), 1), sig, 401},
		{"operator without callbacks", "/callbacks/mtn", body, sig, 404},
		{"wrong method", "/callbacks/airtel", nil, "", 405},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r response
			if c.status == 405 {
				r = do(t, s, "GET", c.path, "", nil)
			} else {
				r = postCallback(t, s, c.path, c.body, c.sig)
			}
			if r.status != c.status {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, c.status)
			}
			if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); got.body["status"] != "PENDING" {
				t.Fatalf("a refused callback settled the payment: %s", got.raw)
			}
		})
	}

	// An in-progress report changes nothing; an unknown payment is 404.
	progress, progressSig := sandbox.SignedCallback(secret, ref, operator.Outcome{State: operator.Pending})
	if r := postCallback(t, s, "/callbacks/airtel", progress, progressSig); r.status != 200 {
		t.Errorf("in-progress callback: %d %s", r.status, r.raw)
	}
	unknown, unknownSig := sandbox.SignedCallback(secret, "SERVICE-NOSUCH00", failed)
	if r := postCallback(t, s, "/callbacks/airtel", unknown, unknownSig); r.status != 404 {
		t.Errorf("callback for an unknown payment: %d %s", r.status, r.raw)
	}

	// The authentic callback settles it, once.
	if r := postCallback(t, s, "/callbacks/airtel", body, sig); r.status != 200 {
		t.Fatalf("authentic callback: %d %s", r.status, r.raw)
	}
	if got := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil); got.body["status"] != "FAILED" {
		t.Fatalf("after the callback: %s", got.raw)
	}
	if r := postCallback(t, s, "/callbacks/airtel", body, sig); r.status != 200 {
		t.Errorf("a repeated callback: %d %s", r.status, r.raw)
	}
	if cases, _ := s.App.Cases.List(t.Context()); len(cases) != 0 {
		t.Errorf("a repeated identical callback made reconciliation cases: %v", cases)
	}
}
