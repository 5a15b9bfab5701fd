package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/team"
)

// TestOversizedForms sends every form of the dashboard with a field far
// over the forms' bound: each answers 400 and nothing changes (no key,
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
			if r := br.postForm(path, form); r.status != http.StatusBadRequest {
				t.Errorf("POST %s with an oversized form: %d, want 400", path, r.status)
			} else if !strings.Contains(r.body, "The form could not be read.") && !strings.Contains(r.body, "field-error") {
				t.Errorf("POST %s with an oversized form: neither a field named nor the form said unreadable", path)
			}
		}
		if r := b.browser().postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {password}, "pad": {pad}}); r.status != http.StatusBadRequest || r.cookie != nil {
			t.Errorf("an oversized sign-in form: %d, cookie %v", r.status, r.cookie)
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
