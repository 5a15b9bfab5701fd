package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

func TestAuthentication(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(nil))
	path := "/v1/transactions/" + created.body["id"].(string)

	_, revokedKey := s.NewMerchant(t)
	keys, err := s.App.APIKeys.List(t.Context(), merchantOf(t, s, revokedKey))
	if err != nil || len(keys) != 1 {
		t.Fatal(err, keys)
	}
	if _, err := s.App.APIKeys.Revoke(t.Context(), keys[0].MerchantID, keys[0].ID, time.Now()); err != nil {
		t.Fatal(err)
	}

	// message: what the error's message says, in part.
	for _, c := range []struct{ name, header, message string }{
		{"missing", "", "missing API key"},
		{"not bearer", "Basic " + s.APIKey, "must be Bearer"},
		{"bare key", s.APIKey, "must be Bearer"},
		{"empty bearer", "Bearer ", "must be Bearer"},
		{"unknown key", "Bearer service_live_" + strings.Repeat("A", 32), "invalid or revoked"},
		{"malformed key", "Bearer sk_test_123", "invalid or revoked"},
		{"revoked key", "Bearer " + revokedKey, "invalid or revoked"},
		{"two keys", "Bearer " + s.APIKey + "\nBearer " + s.APIKey, "one Authorization header"},
	} {
		for _, ep := range []struct{ method, path string }{{"GET", path}, {"GET", "/v1/transactions"}, {"POST", "/v1/transactions"}} {
			t.Run(c.name+" "+ep.method+" "+ep.path, func(t *testing.T) {
				req, _ := http.NewRequest(ep.method, s.URL+ep.path, strings.NewReader(mustJSON(t, newPayment(nil))))
				req.Header.Set("Content-Type", "application/json")
				for h := range strings.SplitSeq(c.header, "\n") {
					if h != "" {
						req.Header.Add("Authorization", h)
					}
				}
				r := send(t, req)
				if msg, _ := r.errorField("message").(string); r.status != 401 || r.errorField("code") != "UNAUTHORIZED" || r.errorField("status") != 401.0 || !strings.Contains(msg, c.message) {
					t.Errorf("got %d %s, want 401 saying %q", r.status, r.raw, c.message)
				}
			})
		}
	}
	// The message reads in curl as written: <, > and & are not escaped
	// as \u003c… (the answer is JSON, never HTML).
	if r := do(t, s, "GET", "/v1/transactions", "", nil); !strings.Contains(string(r.raw), `"missing API key: send Authorization: Bearer <API_KEY>"`) {
		t.Errorf("missing key: %s", r.raw)
	}
	// Nothing was created by the refused POSTs.
	list := do(t, s, "GET", "/v1/transactions", s.APIKey, nil)
	if total := list.body["pagination"].(map[string]any)["total"]; total != 1.0 {
		t.Errorf("total %v, want 1", total)
	}
}

// merchantOf finds the merchant of a key through the real authenticator.
func merchantOf(t *testing.T, s *testserver.Server, key string) string {
	m, err := s.App.APIKeys.Authenticate(t.Context(), key, time.Now())
	if err != nil || m == "" {
		t.Fatalf("key does not authenticate: %v", err)
	}
	return m
}

func TestGetTransactionIsolation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(nil))
		id := created.body["id"].(string)
		_, otherKey := s.NewMerchant(t)
		for _, c := range []struct{ name, key, id string }{
			{"another merchant's", otherKey, id},
			{"unknown", s.APIKey, "0194a4c0-0000-7000-8000-000000000000"},
			{"malformed", s.APIKey, "not-a-uuid"},
			{"sql in id", s.APIKey, url.PathEscape("' OR 1=1 --")},
		} {
			r := do(t, s, "GET", "/v1/transactions/"+c.id, c.key, nil)
			if r.status != 404 || r.errorField("code") != "NOT_FOUND" {
				t.Errorf("%s: %d %s", c.name, r.status, r.raw)
			}
		}
		list := do(t, s, "GET", "/v1/transactions", otherKey, nil)
		if total := list.body["pagination"].(map[string]any)["total"]; total != 0.0 {
			t.Errorf("another merchant lists %v transactions", total)
		}
	})
}

func TestListTransactions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		var ids []string // in creation order
		for i := range 25 {
			op := "AIRTEL"
			if i%5 == 0 {
				op = "MOOV"
			}
			r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"operator": op, "amount": 100 + i}))
			if r.status != 201 {
				t.Fatalf("create: %d %s", r.status, r.raw)
			}
			ids = append(ids, r.body["id"].(string))
		}
		_, otherKey := s.NewMerchant(t)
		do(t, s, "POST", "/v1/transactions", otherKey, newPayment(nil))

		page := func(query string) response {
			t.Helper()
			r := do(t, s, "GET", "/v1/transactions"+query, s.APIKey, nil)
			if r.status != 200 {
				t.Fatalf("%s: %d %s", query, r.status, r.raw)
			}
			return r
		}
		pag := func(r response) string {
			p := r.body["pagination"].(map[string]any)
			return fmt.Sprintf("%v/%v/%v/%v", p["page"], p["per_page"], p["total"], p["total_pages"])
		}
		dataIDs := func(r response) []string {
			var out []string
			for _, d := range r.body["data"].([]any) {
				out = append(out, d.(map[string]any)["id"].(string))
			}
			return out
		}

		def := page("")
		if got := pag(def); got != "1/20/25/2" {
			t.Errorf("default pagination %s", got)
		}
		// Newest first, and list items leave out description and expires_at.
		if got := dataIDs(def); len(got) != 20 || got[0] != ids[24] || got[19] != ids[5] {
			t.Errorf("order: first %v, want newest %s", got[:1], ids[24])
		}
		item := def.body["data"].([]any)[0].(map[string]any)
		for _, absent := range []string{"description", "expires_at"} {
			if _, ok := item[absent]; ok {
				t.Errorf("list item carries %s", absent)
			}
		}
		if len(item) != 10 {
			t.Errorf("list item has %d fields, want 10: %v", len(item), item)
		}
		second := page("?page=2")
		if got := dataIDs(second); len(got) != 5 || got[4] != ids[0] || pag(second) != "2/20/25/2" {
			t.Errorf("page 2: %v %s", got, pag(second))
		}
		past := page("?page=9&per_page=10")
		if len(dataIDs(past)) != 0 || pag(past) != "9/10/25/3" {
			t.Errorf("past the end: %s %s", past.raw, pag(past))
		}
		if got := pag(page("?per_page=100")); got != "1/100/25/1" {
			t.Errorf("per_page=100: %s", got)
		}
		moov := page("?operator=MOOV")
		if pag(moov) != "1/20/5/1" {
			t.Errorf("operator filter: %s", pag(moov))
		}
		for _, d := range moov.body["data"].([]any) {
			if d.(map[string]any)["operator"] != "MOOV" {
				t.Errorf("operator filter let through %v", d)
			}
		}
		if got := pag(page("?status=PENDING&operator=AIRTEL")); got != "1/20/20/1" {
			t.Errorf("status+operator: %s", got)
		}
		if got := pag(page("?status=SUCCESS")); got != "1/20/0/0" {
			t.Errorf("status=SUCCESS: %s", got)
		}

		// from/to are inclusive on created_at, and a bare date is a whole day.
		first := do(t, s, "GET", "/v1/transactions/"+ids[0], s.APIKey, nil).body["created_at"].(string)
		tenth := do(t, s, "GET", "/v1/transactions/"+ids[9], s.APIKey, nil).body["created_at"].(string)
		if got := pag(page("?from=" + url.QueryEscape(first) + "&to=" + url.QueryEscape(tenth))); got != "1/20/10/1" {
			t.Errorf("from first to tenth: %s", got)
		}
		if got := pag(page("?to=" + url.QueryEscape(first))); got != "1/20/1/1" {
			t.Errorf("to = first created_at (inclusive): %s", got)
		}
		// Bounds finer than a microsecond: from just after the tenth's
		// created_at leaves it out, to just after the first's keeps it.
		after := func(ts string) string { return url.QueryEscape(strings.TrimSuffix(ts, "Z") + "1Z") }
		if got := pag(page("?from=" + first + "&to=" + after(tenth))); got != "1/20/10/1" {
			t.Errorf("to a tenth of a microsecond after the tenth: %s", got)
		}
		if got := pag(page("?from=" + after(first) + "&to=" + tenth)); got != "1/20/9/1" {
			t.Errorf("from a tenth of a microsecond after the first: %s, want the first left out", got)
		}
		// The same instant finer than a microsecond as both bounds: no
		// payment was made then, which is an empty list, not "to before
		// from".
		if got := pag(page("?from=" + after(first) + "&to=" + after(first))); got != "1/20/0/0" {
			t.Errorf("from and to the same tenth of a microsecond: %s", got)
		}
		today := time.Now().UTC().Format(time.DateOnly)
		if got := pag(page("?from=" + today + "&to=" + today)); got != "1/20/25/2" {
			t.Errorf("today as dates: %s", got)
		}
		if got := pag(page("?to=2000-01-01")); got != "1/20/0/0" {
			t.Errorf("to=2000-01-01: %s", got)
		}
	})
}

func TestListValidation(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	for query, field := range map[string]string{
		"?per_page=500":                  "per_page",
		"?per_page=101":                  "per_page",
		"?per_page=0":                    "per_page",
		"?per_page=ten":                  "per_page",
		"?page=0":                        "page",
		"?page=-1":                       "page",
		"?page=1.5":                      "page",
		"?status=pending":                "status",
		"?status=DONE":                   "status",
		"?operator=MTN":                  "operator",
		"?from=yesterday":                "from",
		"?to=2026-13-01":                 "to",
		"?from=2026-11-02&to=2026-11-01": "to",
		"?reference=order-1":             "reference",
		"?page=1&page=2":                 "page",
	} {
		r := do(t, s, "GET", "/v1/transactions"+query, s.APIKey, nil)
		if r.status != 400 || r.errorField("code") != "VALIDATION_ERROR" {
			t.Errorf("%s: %d %s", query, r.status, r.raw)
			continue
		}
		if _, ok := r.fields()[field]; !ok {
			t.Errorf("%s: fields %v lack %s", query, r.fields(), field)
		}
	}
}

func TestRequestID(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	req, _ := http.NewRequest("GET", s.URL+"/v1/transactions", nil)
	req.Header.Set("Authorization", "Bearer "+s.APIKey)
	req.Header.Set("X-Request-Id", "merchant-trace-42")
	if r := send(t, req); r.header.Get("X-Request-Id") != "merchant-trace-42" {
		t.Errorf("caller's request id not echoed: %q", r.header.Get("X-Request-Id"))
	}
	req.Header.Set("X-Request-Id", "bad id\twith tab")
	if r := send(t, req); r.header.Get("X-Request-Id") == "bad id\twith tab" {
		t.Error("an unsafe request id was echoed")
	}
}

func TestRateLimit(t *testing.T) {
	s := testserver.Start(t, testserver.Options{RateLimit: api.RateLimit{PerSecond: 1, Burst: 3}})
	var last response
	for range 4 {
		last = do(t, s, "GET", "/v1/transactions", s.APIKey, nil)
	}
	if last.status != 429 || last.errorField("code") != "RATE_LIMITED" {
		t.Fatalf("4th request in a burst of 3: %d %s", last.status, last.raw)
	}
	if ra, _ := last.errorField("retry_after").(float64); ra < 1 || last.header.Get("Retry-After") == "" {
		t.Errorf("retry_after %v, Retry-After %q", last.errorField("retry_after"), last.header.Get("Retry-After"))
	}
	// The limit is per merchant: another merchant's key has its own.
	_, otherKey := s.NewMerchant(t)
	if r := do(t, s, "GET", "/v1/transactions", otherKey, nil); r.status != 200 {
		t.Errorf("another merchant is limited too: %d", r.status)
	}
}
