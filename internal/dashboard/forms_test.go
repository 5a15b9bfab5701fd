package dashboard_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/team"
)

// TestOversizedForms sends every form of the dashboard with a field far
// over the forms' bound: each answers 413 and nothing changes (no key,
// endpoint or user is added, no role, password or language is set).
func TestOversizedForms(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		dev := b.addUser(b.s.MerchantID, "dev@example.td", team.Developer)
		br := b.login(b.owner.Email)
		pad := strings.Repeat("A", 100<<10)
		someID := uuid.NewString()
		keysBefore, err := b.s.App.APIKeys.List(ctx, b.s.MerchantID)
		if err != nil {
			t.Fatal(err)
		}
		forms := map[string]url.Values{
			"/keys":                           {"request": {pad}},
			"/webhooks":                       {"url": {"https://hooks.example.td/" + pad}},
			"/webhooks/" + someID + "/rotate": {"request": {pad}},
			"/webhooks/deliveries/" + someID + "/resend": {"return": {"/" + pad}},
			"/webhooks/resend-undelivered":               {"since": {pad}},
			"/reconciliation/" + someID + "/resolve":     {"note": {pad}},
			"/phone/" + someID + "/answer":               {"answer": {"confirm"}, "pin": {pad}},
			"/team":                                      {"email": {"new@example.td"}, "role": {"admin"}, "password": {pad}},
			"/team/" + dev.ID + "/role":                  {"role": {"admin"}, "pad": {pad}},
			"/account/password":                          {"current": {password}, "new": {pad}},
			"/account/language":                          {"language": {"fr"}, "pad": {pad}},
		}
		for path, form := range forms {
			if r := br.postForm(path, form); r.status != http.StatusRequestEntityTooLarge {
				t.Errorf("POST %s with an oversized form: %d, want 413", path, r.status)
			} else if !strings.Contains(r.body, "The form could not be read.") && !strings.Contains(r.body, "field-error") {
				t.Errorf("POST %s with an oversized form: neither a field named nor the form said unreadable", path)
			}
		}
		if r := b.browser().postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {password}, "pad": {pad}}); r.status != http.StatusRequestEntityTooLarge || r.cookie != nil {
			t.Errorf("an oversized sign-in form: %d, cookie %v", r.status, r.cookie)
		}

		if r := b.browser().postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"`+pad+`"}`); r.status != http.StatusRequestEntityTooLarge || r.errorCode() != "PAYLOAD_TOO_LARGE" {
			t.Errorf("an oversized JSON sign-in: %d %s, want 413 PAYLOAD_TOO_LARGE", r.status, r.body)
		}

		keys, err := b.s.App.APIKeys.List(ctx, b.s.MerchantID)
		if err != nil {
			t.Fatal(err)
		}
		endpoints, err := b.s.App.Webhooks.Endpoints(ctx, b.s.MerchantID)
		if err != nil {
			t.Fatal(err)
		}
		users, err := b.s.App.Users.List(ctx, b.s.MerchantID)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != len(keysBefore) || len(endpoints) != 0 || len(users) != 2 {
			t.Errorf("after oversized forms: %d keys (%d before), %d endpoints, %d users", len(keys), len(keysBefore), len(endpoints), len(users))
		}
		for _, u := range users {
			if u.ID == dev.ID && (u.Role != team.Developer || u.Language != "") {
				t.Errorf("the developer after oversized forms: %+v", u)
			}
			if u.ID == b.owner.ID && u.Language != "" {
				t.Errorf("the owner's language after an oversized form: %q", u.Language)
			}
		}
		// The password is unchanged: the same one still signs in.
		if b.login(b.owner.Email).signedOut() {
			t.Error("the owner's password changed")
		}
	})
}

// TestNotTextAnywhere sends bytes that are not UTF-8 text, and NUL, in
// every form field and query parameter the dashboard reads: none is
// answered 500 on either engine (PostgreSQL refuses to store or compare
// such text, and answered two of them 500 before), and no endpoint is
// added with such a URL.
func TestNotTextAnywhere(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		someID := uuid.NewString()
		for _, bad := range []string{"\xff", "\xc0\xaf", "\x00"} {
			forms := map[string]url.Values{
				"/keys":                           {"request": {bad}},
				"/webhooks":                       {"url": {"http://hooks.example.td/" + bad}},
				"/webhooks/" + someID + "/rotate": {"request": {bad}},
				"/webhooks/deliveries/" + someID + "/resend": {"return": {"/" + bad}},
				"/webhooks/resend-undelivered":               {"since": {bad}, "endpoint": {bad}},
				"/reconciliation/" + someID + "/resolve":     {"note": {bad}},
				"/phone/" + someID + "/answer":               {"answer": {bad}, "pin": {bad}},
				"/team":                                      {"email": {bad + "@example.td"}, "role": {bad}, "password": {strings.Repeat(bad, 12)}},
				"/account/password":                          {"current": {bad}, "new": {strings.Repeat(bad, 12)}},
				"/account/language":                          {"language": {bad}},
			}
			for path, form := range forms {
				if r := br.postForm(path, form); r.status >= 500 {
					t.Errorf("POST %s with %q: %d", path, bad, r.status)
				}
			}
			q := url.QueryEscape(bad)
			for _, path := range []string{
				"/audit?before=2026-01-01T00:00:00Z&id=" + q,
				"/transactions?q=" + q + "&status=" + q + "&operator=" + q + "&from=" + q + "&to=" + q,
				"/transactions?before=" + q, "/transactions?after=" + q,
				"/transactions/export.csv?q=" + q,
				"/webhooks/deliveries?state=" + q + "&event=" + q + "&endpoint=" + q + "&show=" + q + "&after=" + q,
				"/webhooks?test=" + q, "/phone?number=" + q, "/login?next=" + q + "&lang=" + q,
			} {
				if r := br.get(path); r.status >= 500 {
					t.Errorf("GET %s: %d", path, r.status)
				}
			}
		}
		if endpoints, err := b.s.App.Webhooks.Endpoints(context.Background(), b.s.MerchantID); err != nil || len(endpoints) != 0 {
			t.Errorf("endpoints after URLs that are not text: %v %v", endpoints, err)
		}
	})
}

// TestFormsNotURLEncoded: a form sent as multipart (curl -F) is read like
// the pages' own; a body that is no form (text, JSON) is refused 415, not
// read as an empty form whose every field is missing.
func TestFormsNotURLEncoded(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		br := b.login(b.owner.Email)
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for k, v := range map[string]string{"email": "multi@example.td", "role": "viewer", "password": "a long password"} {
			mw.WriteField(k, v)
		}
		mw.Close()
		req, _ := http.NewRequest("POST", b.s.URL+"/team", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		if r := br.do(req); r.status != http.StatusSeeOther {
			t.Errorf("a multipart form adding a user: %d, want 303\n%s", r.status, r.body)
		}
		req, _ = http.NewRequest("POST", b.s.URL+"/team", strings.NewReader("email=plain@example.td&role=viewer&password=a+long+password"))
		req.Header.Set("Content-Type", "text/plain")
		if r := br.do(req); r.status != http.StatusUnsupportedMediaType || !strings.Contains(r.body, "The form could not be read.") {
			t.Errorf("a text/plain body: %d, want 415 and the page saying the form could not be read", r.status)
		}
		users, err := b.s.App.Users.List(ctx, b.s.MerchantID)
		if err != nil {
			t.Fatal(err)
		}
		var emails []string
		for _, u := range users {
			emails = append(emails, u.Email)
		}
		if !slices.Contains(emails, "multi@example.td") || slices.Contains(emails, "plain@example.td") {
			t.Errorf("users after a multipart and a text/plain form: %v", emails)
		}
	})
}
