package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

var internalRefPattern = regexp.MustCompile(`^SERVICE-[A-Z0-9]{8}$`)

func TestCreateTransaction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		body := newPayment(map[string]any{"amount": 2500, "operator": "MOOV"})
		before := time.Now().UTC().Add(-time.Second)
		r := do(t, s, "POST", "/v1/transactions", s.APIKey, body)
		if r.status != http.StatusCreated {
			t.Fatalf("status %d: %s", r.status, r.raw)
		}
		b := r.body
		want := map[string]any{"reference": body["reference"], "amount": 2500.0, "currency": "XAF", "operator": "MOOV",
			"phone_number": "+23566000000", "description": "Order", "status": "PENDING"}
		for k, v := range want {
			if b[k] != v {
				t.Errorf("%s = %v, want %v", k, b[k], v)
			}
		}
		if !internalRefPattern.MatchString(b["internal_ref"].(string)) {
			t.Errorf("internal_ref %q", b["internal_ref"])
		}
		created, err1 := time.Parse(time.RFC3339, b["created_at"].(string))
		expires, err2 := time.Parse(time.RFC3339, b["expires_at"].(string))
		if err1 != nil || err2 != nil || !strings.HasSuffix(b["created_at"].(string), "Z") {
			t.Fatalf("timestamps not RFC 3339 UTC: %v %v", b["created_at"], b["expires_at"])
		}
		if created.Before(before) || expires.Sub(created) != 5*time.Minute {
			t.Errorf("created_at %v, expires_at %v: want expires = created + 5m", created, expires)
		}
		if b["updated_at"] != b["created_at"] {
			t.Errorf("updated_at %v != created_at %v", b["updated_at"], b["created_at"])
		}
		if loc := r.header.Get("Location"); loc != "/v1/transactions/"+b["id"].(string) {
			t.Errorf("Location %q", loc)
		}

		// The stored transaction reads back identically.
		got := do(t, s, "GET", "/v1/transactions/"+b["id"].(string), s.APIKey, nil)
		if got.status != http.StatusOK || string(got.raw) != string(r.raw) {
			t.Errorf("GET after create: %d %s, want %s", got.status, got.raw, r.raw)
		}

		// Description is optional and then null.
		r = do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"description": nil}))
		if r.status != http.StatusCreated || r.body["description"] != nil {
			t.Errorf("without description: %d %s", r.status, r.raw)
		}
		if _, present := r.body["description"]; !present {
			t.Errorf("description must be present as null: %s", r.raw)
		}
	})
}

func TestCreateValidation(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	long := strings.Repeat("x", 256)
	cases := []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"invalid JSON", `{"reference":`, 400, []string{"body"}},
		{"not an object", `[1,2]`, 400, []string{"body"}},
		{"unknown field", newPayment(map[string]any{"customer": "x"}), 400, []string{"customer"}},
		{"missing fields", map[string]any{}, 400, []string{"reference", "amount", "currency", "operator", "phone_number"}},
		{"decimal amount", newPayment(map[string]any{"amount": 150.5}), 400, []string{"amount"}},
		{"decimal notation", `{"reference":"r-dec","amount":100.0,"currency":"XAF","operator":"AIRTEL","phone_number":"+23566000000"}`, 400, []string{"amount"}},
		{"exponent amount", `{"reference":"r-exp","amount":1e3,"currency":"XAF","operator":"AIRTEL","phone_number":"+23566000000"}`, 400, []string{"amount"}},
		{"string amount", newPayment(map[string]any{"amount": "1500"}), 400, []string{"amount"}},
		{"huge amount", `{"reference":"r-big","amount":99999999999999999999,"currency":"XAF","operator":"AIRTEL","phone_number":"+23566000000"}`, 422, []string{"amount"}},
		{"amount above maximum", newPayment(map[string]any{"amount": 10_000_001}), 422, []string{"amount"}},
		{"amount max int64", `{"reference":"r-i64","amount":9223372036854775807,"currency":"XAF","operator":"AIRTEL","phone_number":"+23566000000"}`, 422, []string{"amount"}},
		{"amount below min int64", `{"reference":"r-neg","amount":-99999999999999999999,"currency":"XAF","operator":"AIRTEL","phone_number":"+23566000000"}`, 422, []string{"amount"}},
		{"phone without prefix", newPayment(map[string]any{"phone_number": "66000000"}), 400, []string{"phone_number"}},
		{"phone too short", newPayment(map[string]any{"phone_number": "+2356600000"}), 400, []string{"phone_number"}},
		{"phone other country", newPayment(map[string]any{"phone_number": "+23766000000"}), 400, []string{"phone_number"}},
		{"currency EUR", newPayment(map[string]any{"currency": "EUR"}), 400, []string{"currency"}},
		{"currency lower case", newPayment(map[string]any{"currency": "xaf"}), 400, []string{"currency"}},
		{"operator lower case", newPayment(map[string]any{"operator": "airtel"}), 400, []string{"operator"}},
		{"operator number", newPayment(map[string]any{"operator": 1}), 400, []string{"operator"}},
		{"empty reference", newPayment(map[string]any{"reference": ""}), 400, []string{"reference"}},
		{"reference with space", newPayment(map[string]any{"reference": "order 1"}), 400, []string{"reference"}},
		{"reference too long", newPayment(map[string]any{"reference": strings.Repeat("r", 65)}), 400, []string{"reference"}},
		{"description too long", newPayment(map[string]any{"description": long}), 400, []string{"description"}},
		{"description not a string", newPayment(map[string]any{"description": 5}), 400, []string{"description"}},
		{"null reference", newPayment(map[string]any{"reference": "__null__"}), 400, []string{"reference"}},
		{"amount below minimum", newPayment(map[string]any{"amount": 99}), 422, []string{"amount"}},
		{"amount zero", newPayment(map[string]any{"amount": 0}), 422, []string{"amount"}},
		{"amount negative", newPayment(map[string]any{"amount": -500}), 422, []string{"amount"}},
		{"unsupported operator", newPayment(map[string]any{"operator": "MTN"}), 422, []string{"operator"}},
		{"form and value problems", newPayment(map[string]any{"amount": 50, "currency": "USD"}), 400, []string{"amount", "currency"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if m, ok := c.body.(map[string]any); ok && m["reference"] == "__null__" {
				c.body = strings.Replace(mustJSON(t, m), `"__null__"`, "null", 1)
			}
			r := do(t, s, "POST", "/v1/transactions", s.APIKey, c.body)
			if r.status != c.status || r.errorField("code") != "VALIDATION_ERROR" || r.errorField("status") != float64(c.status) {
				t.Fatalf("got %d %s, want %d VALIDATION_ERROR", r.status, r.raw, c.status)
			}
			if msg, _ := r.errorField("message").(string); msg == "" {
				t.Error("empty message")
			}
			if len(r.fields()) != len(c.fields) && c.fields != nil {
				t.Errorf("fields %v, want exactly %v", r.fields(), c.fields)
			}
			for _, f := range c.fields {
				if _, ok := r.fields()[f]; !ok {
					t.Errorf("fields %v lack %q", r.fields(), f)
				}
			}
		})
	}
	// No rejected request left anything behind.
	list := do(t, s, "GET", "/v1/transactions", s.APIKey, nil)
	if total := list.body["pagination"].(map[string]any)["total"]; total != 0.0 {
		t.Errorf("rejected requests stored %v transactions", total)
	}
}

func TestCreateDescriptionAtLimit(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	desc := strings.Repeat("é", 255) // 255 characters, 510 bytes
	r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"description": desc, "amount": 100}))
	if r.status != http.StatusCreated || r.body["description"] != desc || r.body["amount"] != 100.0 {
		t.Fatalf("got %d %s", r.status, r.raw)
	}
}

func TestCreateRequestLimits(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	big := `{"reference":"r-big","description":"` + strings.Repeat("x", 70<<10) + `"}`
	r := do(t, s, "POST", "/v1/transactions", s.APIKey, big)
	if r.status != http.StatusRequestEntityTooLarge || r.errorField("code") != "PAYLOAD_TOO_LARGE" {
		t.Errorf("oversized body: %d %s", r.status, r.raw)
	}
	// Announced too large: refused at once, without asking for the body.
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/transactions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: 100000\r\nExpect: 100-continue\r\n\r\n", s.APIKey)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if status, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.HasPrefix(status, "HTTP/1.1 413") {
		t.Errorf("a body announced at 100,000 bytes: %q %v, want 413 before any of it is sent", status, err)
	}
	// A body announced as something else is the contract's wrong format;
	// one sent without a Content-Type is read as JSON.
	// JSON is UTF-8: a body announced in another charset is refused too.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-8", "",
		"application/json; charset=iso-8859-1", "application/vnd.api+json", "application/json; charset=UTF-8"} {
		req, _ := http.NewRequest("POST", s.URL+"/v1/transactions", strings.NewReader(mustJSON(t, newPayment(nil))))
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		r = send(t, req)
		json := ct == "" || strings.HasPrefix(ct, "application/json") && !strings.Contains(ct, "iso-8859-1") || strings.HasSuffix(ct, "+json")
		if json && r.status != http.StatusCreated {
			t.Errorf("Content-Type %q: %d %s, want 201", ct, r.status, r.raw)
		}
		if !json && (r.status != http.StatusBadRequest || r.errorField("code") != "VALIDATION_ERROR" || !strings.Contains(string(r.raw), `"body"`)) {
			t.Errorf("Content-Type %q: %d %s, want 400 VALIDATION_ERROR naming the body", ct, r.status, r.raw)
		}
	}
	// A compressed body is bytes that are not JSON, read as they came:
	// said so, rather than "invalid character".
	for _, ce := range []string{"gzip", "br"} {
		req, _ := http.NewRequest("POST", s.URL+"/v1/transactions", strings.NewReader(mustJSON(t, newPayment(nil))))
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		req.Header.Set("Content-Encoding", ce)
		if r := send(t, req); r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), "must not be compressed") {
			t.Errorf("Content-Encoding %s: %d %s, want 400 naming the body", ce, r.status, r.raw)
		}
	}
	// Two Content-Type headers: which one counts would be a guess.
	for _, types := range [][]string{{"application/json", "text/plain"}, {"text/plain", "application/json"}} {
		req, _ := http.NewRequest("POST", s.URL+"/v1/transactions", strings.NewReader(mustJSON(t, newPayment(nil))))
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		req.Header["Content-Type"] = types
		if r := send(t, req); r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), "one Content-Type header") {
			t.Errorf("Content-Type %v: %d %s, want 400 naming the body", types, r.status, r.raw)
		}
	}
	r = do(t, s, "DELETE", "/v1/transactions", s.APIKey, nil)
	if r.status != http.StatusMethodNotAllowed || r.errorField("code") != "METHOD_NOT_ALLOWED" || r.header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("DELETE: %d %s, Allow %q", r.status, r.raw, r.header.Get("Allow"))
	}
	// What Allow names is served: HEAD too.
	if r := do(t, s, "HEAD", "/v1/transactions", s.APIKey, nil); r.status != http.StatusOK {
		t.Errorf("HEAD: %d", r.status)
	}
	// The other public paths say so too, rather than "no such endpoint".
	for _, p := range []string{"/healthz", "/v1/openapi.json"} {
		if r := do(t, s, "POST", p, "", nil); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: %d, Allow %q", p, r.status, r.header.Get("Allow"))
		}
		if r := do(t, s, "HEAD", p, "", nil); r.status != http.StatusOK {
			t.Errorf("HEAD %s: %d", p, r.status)
		}
	}
	// An unclean path is not redirected (a 307 would have a client that
	// follows it send its payment again): 404, nothing created.
	for _, p := range []string{"/v1//transactions", "/v1/./transactions", "/v1/x/../transactions"} {
		req, _ := http.NewRequest("POST", s.URL+"/", strings.NewReader(mustJSON(t, newPayment(nil))))
		req.URL.Opaque = p // sent as written, not cleaned by the client
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		req.Header.Set("Content-Type", "application/json")
		if r := send(t, req); r.status != http.StatusNotFound || r.errorField("code") != "NOT_FOUND" {
			t.Errorf("POST %s: %d %s, want 404 NOT_FOUND", p, r.status, r.raw)
		}
	}
	r = do(t, s, "GET", "/v2/anything", s.APIKey, nil)
	if r.status != http.StatusNotFound || r.errorField("code") != "NOT_FOUND" {
		t.Errorf("unknown path: %d %s", r.status, r.raw)
	}
}

func TestDuplicateReference(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		first := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"reference": "dup-1", "amount": 1000}))
		if first.status != http.StatusCreated {
			t.Fatalf("first: %d %s", first.status, first.raw)
		}
		// Other parameters are ignored when comparing: still a duplicate.
		again := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"reference": "dup-1", "amount": 99999, "operator": "MOOV"}))
		if again.status != http.StatusConflict || again.errorField("code") != "DUPLICATE_REFERENCE" ||
			again.errorField("existing_transaction_id") != first.body["id"] {
			t.Fatalf("duplicate: %d %s", again.status, again.raw)
		}
		// Even when they are wrong: the reference alone decides, so a retry
		// whose body changed still learns the transaction that holds it.
		for name, changes := range map[string]map[string]any{
			"amount under the minimum": {"amount": 50},
			"decimal amount":           {"amount": 1000.5},
			"phone without prefix":     {"phone_number": "60000001"},
			"unknown operator":         {"operator": "MTN"},
			"unknown field":            {"tip": 100},
		} {
			changes["reference"] = "dup-1"
			r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(changes))
			if r.status != http.StatusConflict || r.errorField("existing_transaction_id") != first.body["id"] {
				t.Errorf("taken reference with %s: %d %s, want 409 naming %s", name, r.status, r.raw, first.body["id"])
			}
		}
		// A free reference with a wrong value is refused as such, and so is
		// a reference that is itself wrong.
		if r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"reference": "dup-2", "amount": 50})); r.status != http.StatusUnprocessableEntity {
			t.Errorf("free reference, amount 50: %d %s", r.status, r.raw)
		}
		if r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"reference": "dup 1", "amount": 50})); r.status != http.StatusBadRequest {
			t.Errorf("invalid reference: %d %s", r.status, r.raw)
		}
		got := do(t, s, "GET", "/v1/transactions/"+first.body["id"].(string), s.APIKey, nil)
		if got.body["amount"] != 1000.0 || got.body["operator"] != "AIRTEL" {
			t.Errorf("the stored transaction changed: %s", got.raw)
		}
		// References are per merchant.
		_, otherKey := s.NewMerchant(t)
		other := do(t, s, "POST", "/v1/transactions", otherKey, newPayment(map[string]any{"reference": "dup-1"}))
		if other.status != http.StatusCreated {
			t.Errorf("another merchant's same reference: %d %s", other.status, other.raw)
		}
	})
}

func TestConcurrentDuplicates(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		body := mustJSON(t, newPayment(map[string]any{"reference": "race-1"}))
		var wg sync.WaitGroup
		results := make([]response, 50)
		for i := range results {
			wg.Go(func() { results[i] = do(t, s, "POST", "/v1/transactions", s.APIKey, body) })
		}
		wg.Wait()
		var created []response
		ids := map[any]int{}
		for _, r := range results {
			switch r.status {
			case http.StatusCreated:
				created = append(created, r)
			case http.StatusConflict:
				ids[r.errorField("existing_transaction_id")]++
			default:
				t.Errorf("unexpected %d %s", r.status, r.raw)
			}
		}
		if len(created) != 1 {
			t.Fatalf("%d creations, want exactly 1", len(created))
		}
		if ids[created[0].body["id"]] != 49 || len(ids) != 1 {
			t.Errorf("409s name %v, want 49 × %v", ids, created[0].body["id"])
		}
		list := do(t, s, "GET", "/v1/transactions", s.APIKey, nil)
		if total := list.body["pagination"].(map[string]any)["total"]; total != 1.0 {
			t.Errorf("%v transactions stored, want 1", total)
		}
	})
}
