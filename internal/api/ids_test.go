package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// TestTransactionIDForms: a transaction id is a UUID with its dashes, in
// any case; other spellings are no ids. Before, PostgreSQL found the
// transaction under other spellings that SQLite did not, and answered
// urn:uuid: with a 500.
func TestTransactionIDForms(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(nil))
		id := created.body["id"].(string)
		// A UUID's case does not matter (RFC 9562: case-insensitive on
		// input); the answer gives the id as the service writes it.
		for _, form := range []string{id, strings.ToUpper(id), mixedCase(id)} {
			if r := do(t, s, "GET", "/v1/transactions/"+form, s.APIKey, nil); r.status != 200 || r.body["id"] != id {
				t.Fatalf("id %s: %d %s", form, r.status, r.raw)
			}
		}
		for name, form := range map[string]string{
			"braces":        "{" + id + "}",
			"urn":           "urn:uuid:" + id,
			"no dashes":     strings.ReplaceAll(id, "-", ""),
			"spaces around": " " + id + " ",
			"trailing NUL":  id + "\x00",
			"too long":      id + "0",
			"empty-ish":     "-",
		} {
			r := do(t, s, "GET", "/v1/transactions/"+url.PathEscape(form), s.APIKey, nil)
			if r.status != 404 || r.errorField("code") != "NOT_FOUND" {
				t.Errorf("%s %q: %d %s, want 404 NOT_FOUND", name, form, r.status, r.raw)
			}
		}
	})
}

// mixedCase upper-cases the last letter of id (of 28 random hex digits,
// some are letters but for a chance of about 2 in a million).
func mixedCase(id string) string {
	i := strings.LastIndexAny(id, "abcdef")
	if i < 0 {
		return id + "x"
	}
	return id[:i] + strings.ToUpper(id[i:i+1]) + id[i+1:]
}
