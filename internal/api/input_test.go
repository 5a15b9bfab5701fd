package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// TestCreateRefusesNonText sends strings that are not plain text in each
// field of the create body. Before, a NUL in description was a 500 on
// PostgreSQL and stored on SQLite, and invalid UTF-8 or a lone surrogate
// was silently stored as U+FFFD.
func TestCreateRefusesNonText(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		// body sets one field to a raw JSON string literal, bytes as given.
		body := func(field, literal string) string {
			b := newPayment(nil)
			b[field] = "__raw__"
			return strings.Replace(mustJSON(t, b), `"__raw__"`, literal, 1)
		}
		for _, field := range []string{"description", "reference", "currency", "operator", "phone_number"} {
			for _, c := range []struct{ name, literal string }{
				{"NUL", `"a\u0000b"`},
				{"bell", `"a\u0007b"`},
				{"newline", `"a\nb"`},
				{"DEL", "\"a\x7fb\""},
				{"C1 control", `"a\u0085b"`},
				{"invalid UTF-8", "\"a\xffb\""},
				{"truncated UTF-8", "\"a\xc3\""},
				{"lone high surrogate", `"a\ud800b"`},
				{"lone low surrogate", `"a\udc00b"`},
				{"high surrogate before a letter", `"\ud800\u0041"`},
				{"reversed pair", `"\udc00\ud800"`},
			} {
				t.Run(field+" "+c.name, func(t *testing.T) {
					r := do(t, s, "POST", "/v1/transactions", s.APIKey, body(field, c.literal))
					if r.status != http.StatusBadRequest || r.errorField("code") != "VALIDATION_ERROR" {
						t.Fatalf("got %d %s, want 400 VALIDATION_ERROR", r.status, r.raw)
					}
					if len(r.fields()) != 1 || r.fields()[field] == nil {
						t.Errorf("fields %v, want exactly %s", r.fields(), field)
					}
				})
			}
		}
		// Escapes that are text: a surrogate pair, and an escaped backslash
		// followed by letters that only look like an escape.
		for literal, want := range map[string]string{`"smile \ud83d\ude00"`: "smile 😀", `"path \\ud800"`: `path \ud800`} {
			r := do(t, s, "POST", "/v1/transactions", s.APIKey, body("description", literal))
			if r.status != http.StatusCreated || r.body["description"] != want {
				t.Errorf("description %s: %d %s, want 201 with %q", literal, r.status, r.raw, want)
			}
		}
		list := do(t, s, "GET", "/v1/transactions", s.APIKey, nil)
		if total := list.body["pagination"].(map[string]any)["total"]; total != 2.0 {
			t.Errorf("%v transactions stored, want only the 2 valid ones", total)
		}
	})
}

// TestCreateAmountMaximum: 10,000,000 XAF is the most one payment takes;
// above it, and for integers beyond int64, the answer is 422 naming amount.
func TestCreateAmountMaximum(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		r := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(map[string]any{"amount": 10_000_000}))
		if r.status != http.StatusCreated || r.body["amount"] != 10_000_000.0 {
			t.Fatalf("amount at the maximum: %d %s", r.status, r.raw)
		}
		for _, amount := range []string{"10000001", "9007199254740993", "9223372036854775807", "9223372036854775808", "123456789012345678901234567890"} {
			b := strings.Replace(mustJSON(t, newPayment(map[string]any{"amount": 1})), `"amount":1`, `"amount":`+amount, 1)
			r := do(t, s, "POST", "/v1/transactions", s.APIKey, b)
			if r.status != http.StatusUnprocessableEntity || r.fields()["amount"] == nil || len(r.fields()) != 1 {
				t.Errorf("amount %s: %d %s, want 422 naming amount", amount, r.status, r.raw)
			}
		}
	})
}

// TestCreateAmountType: an amount of another JSON type is a 400 saying so,
// not that it has decimals.
func TestCreateAmountType(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	for amount, says := range map[string]string{`"100"`: "not a string", `true`: "not a string", `[100]`: "not a string",
		`{}`: "not a string", `100.5`: "without decimals", `1e2`: "without decimals or exponent"} {
		b := strings.Replace(mustJSON(t, newPayment(map[string]any{"amount": 1})), `"amount":1`, `"amount":`+amount, 1)
		r := do(t, s, "POST", "/v1/transactions", s.APIKey, b)
		if msg, _ := r.fields()["amount"].(string); r.status != http.StatusBadRequest || !strings.Contains(msg, says) {
			t.Errorf("amount %s: %d %s, want 400 saying %q", amount, r.status, r.raw, says)
		}
	}
}

// TestCreateBodyErrorsNameBody: a body that is not a readable JSON object
// gets a VALIDATION_ERROR whose fields name "body", as every validation
// error carries fields.
func TestCreateBodyErrorsNameBody(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	for name, body := range map[string]string{
		"empty":              "",
		"blank":              " \n",
		"null":               "null",
		"array":              "[]",
		"number":             "5",
		"string":             `"x"`,
		"truncated object":   `{"reference":"a"`,
		"trailing junk":      `{"reference":"a"} x`,
		"two objects":        `{}{}`,
		"invalid UTF-8 name": "{\"ref\xff\":1}",
		"byte order mark":    "\uFEFF{\"reference\":\"bom-1\"}",
		// Which one would count is a guess a proxy may make otherwise.
		"a field twice": `{"reference":"dup-1","amount":50,"currency":"XAF","operator":"MOOV","phone_number":"+23599000001","amount":1000}`,
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", s.URL+"/v1/transactions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+s.APIKey)
			req.Header.Set("Content-Type", "application/json")
			r := send(t, req)
			if r.status != 400 || r.errorField("code") != "VALIDATION_ERROR" || r.errorField("status") != 400.0 {
				t.Fatalf("got %d %s, want 400 VALIDATION_ERROR", r.status, r.raw)
			}
			if msg, _ := r.fields()["body"].(string); msg == "" || len(r.fields()) != 1 || strings.Contains(msg, "ï") {
				t.Errorf("fields %v, want exactly body, in words", r.fields())
			}
		})
	}
}
