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
