package api_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/operator/airtel/airtelsim"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// TestFinalAnswersKept: a final transaction's answer is kept in memory and
// served again byte for byte, to its own merchant only; a PENDING one is
// read afresh each time, so its settlement shows at once, on both engines.
func TestFinalAnswersKept(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23566112233"})) // waits for an answer by hand
		id, ref := created.body["id"].(string), created.body["internal_ref"].(string)
		path := "/v1/transactions/" + id
		for range 2 {
			if r := do(t, s, "GET", path, s.APIKey, nil); r.status != 200 || r.body["status"] != "PENDING" {
				t.Fatalf("pending: %d %s", r.status, r.raw)
			}
		}
		if r := postCallback(t, s, "/callbacks/airtel", airtelsim.SignedCallback(s.App.SandboxCallbackSecret, ref, "TS", "paid", "AM9"), ""); r.status != 200 {
			t.Fatalf("callback: %d %s", r.status, r.raw)
		}
		first := do(t, s, "GET", path, s.APIKey, nil) // settled: read, then kept
		if first.status != 200 || first.body["status"] != "SUCCESS" || first.body["updated_at"] == created.body["updated_at"] {
			t.Fatalf("after the settlement: %d %s", first.status, first.raw)
		}
		for _, form := range []string{path, "/v1/transactions/" + strings.ToUpper(id)} {
			again := do(t, s, "GET", form, s.APIKey, nil)
			if again.status != 200 || !bytes.Equal(again.raw, first.raw) || again.header.Get("Content-Type") != first.header.Get("Content-Type") ||
				again.header.Get("Cache-Control") != "no-store" {
				t.Errorf("kept answer for %s: %d %q %v, want the first one's bytes and headers", form, again.status, again.raw, again.header)
			}
		}
		_, otherKey := s.NewMerchant(t)
		if r := do(t, s, "GET", path, otherKey, nil); r.status != 404 {
			t.Errorf("another merchant reading a kept transaction: %d %s, want 404", r.status, r.raw)
		}
		// The kept answer needs no database at all; a PENDING one does.
		// (API keys are checked against memory on PostgreSQL only.)
		if engine == "postgres" {
			pending := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"phone_number": "+23566112233"}))
			s.App.DB.Close()
			if r := do(t, s, "GET", path, s.APIKey, nil); r.status != 200 || !bytes.Equal(r.raw, first.raw) {
				t.Errorf("a final transaction with the database gone: %d %s, want its kept answer", r.status, r.raw)
			}
			if r := do(t, s, "GET", "/v1/transactions/"+pending.body["id"].(string), s.APIKey, nil); r.status == 200 {
				t.Errorf("a pending transaction with the database gone: %d %s, want an error", r.status, r.raw)
			}
		}
	})
}
