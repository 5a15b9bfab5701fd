package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/team"
)

// TestFormErrorsInFrench: the domain's refusals of the webhook, team and
// account forms are shown in the page's language, each under its field
// (aria-invalid, and aria-describedby naming the field's help and error),
// with the count of fields to correct above the form, and the domain's
// English words nowhere.
func TestFormErrorsInFrench(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		br.headers["Accept-Language"] = "fr"
		// shows fails the test unless r is a 422 page holding every want
		// and none of the domain's English.
		shows := func(what string, r answer, want ...string) {
			t.Helper()
			if r.status != http.StatusUnprocessableEntity {
				t.Errorf("%s: %d, want 422", what, r.status)
			}
			for _, w := range want {
				if !strings.Contains(r.body, w) {
					t.Errorf("%s: the page lacks %q", what, w)
				}
			}
			for _, english := range []string{"webhook URL", "must be", "already exists", "password must", "email must"} {
				if strings.Contains(r.body, english) {
					t.Errorf("%s: the French page shows the domain's English %q", what, english)
				}
			}
		}

		for _, tc := range []struct{ url, want string }{
			{"ftp://example.com/hook", "L&#39;URL doit commencer par http:// ou https://."},
			{"http://10.255.255.53:53/x", "L&#39;URL ne doit pas désigner une adresse privée"},
			{"https://user:pw@example.com/hook", "ni nom d&#39;utilisateur ni mot de passe"},
		} {
			r := br.postForm("/webhooks", url.Values{"url": {tc.url}})
			shows(tc.url, r, tc.want, `<p class="error" role="alert">Veuillez corriger le champ ci-dessous.</p>`,
				`aria-describedby="wh-url-help wh-url-error" aria-invalid="true"`, `<p class="field-error" id="wh-url-error">`)
			// One presentation: the reason under the field only.
			if n := strings.Count(r.body, tc.want); n != 1 {
				t.Errorf("%s: the reason is shown %d times", tc.url, n)
			}
		}
		br.postForm("/webhooks", url.Values{"url": {"https://example.com/hook"}})
		shows("the same URL twice", br.postForm("/webhooks", url.Values{"url": {"https://example.com/hook"}}), "Cette URL est déjà enregistrée")

		shows("a short password", br.postForm("/team", url.Values{"email": {"new@example.com"}, "role": {"viewer"}, "password": {"short"}}),
			"Le mot de passe doit compter de 12 à 72 caractères (une lettre accentuée compte pour deux).",
			`aria-describedby="new-password-help new-password-error" aria-invalid="true"`, "Veuillez corriger le champ ci-dessous.")
		// A password of 40 accented letters is 80 bytes: too long, and the
		// help said why.
		shows("a long password", br.postForm("/team", url.Values{"email": {"new@example.com"}, "role": {"viewer"}, "password": {strings.Repeat("é", 40)}}),
			"Le mot de passe doit compter de 12 à 72 caractères")
		// Long enough, but among the first an attacker tries.
		shows("a guessable password", br.postForm("/team", url.Values{"email": {"new@example.com"}, "role": {"viewer"}, "password": {"passwordpassword"}}),
			"Ce mot de passe est trop facile à deviner", `id="new-password-error"`)
		// Made of the merchant's name ("Test Merchant"), here and on the
		// account page, whatever else is wrong.
		shows("the merchant's name as password", br.postForm("/team", url.Values{"email": {"new@example.com"}, "role": {"viewer"}, "password": {"testmerchant2026"}}),
			"Ce mot de passe est trop facile à deviner", `id="new-password-error"`)
		shows("the merchant's name as new password", br.postForm("/account/password", url.Values{"current": {password}, "new": {"Test Merchant 1"}}),
			`id="new-error">Ce mot de passe est trop facile à deviner`)
		shows("a wrong current password and the merchant's name", br.postForm("/account/password", url.Values{"current": {"not my password"}, "new": {"Test Merchant 1"}}),
			`id="current-error">Le mot de passe actuel est incorrect.</p>`, `id="new-error">Ce mot de passe est trop facile à deviner`)
		shows("two bad fields", br.postForm("/team", url.Values{"email": {"not an address"}, "role": {"viewer"}, "password": {"short"}}),
			"Veuillez corriger les 2 champs ci-dessous.", "Saisissez une adresse e-mail comme nom@exemple.com",
			`aria-invalid="true" aria-describedby="new-email-error"`, `id="new-password-error"`)
		shows("a taken email", br.postForm("/team", url.Values{"email": {b.owner.Email}, "role": {"viewer"}, "password": {password}}),
			"Un utilisateur avec cet e-mail existe déjà.", `value="`+b.owner.Email+`"`)

		shows("a short new password", br.postForm("/account/password", url.Values{"current": {password}, "new": {"short"}}),
			`aria-describedby="new-help new-error" aria-invalid="true"`, `<p class="field-error" id="new-error">Le mot de passe doit compter de 12 à 72 caractères`)
		shows("a guessable new password", br.postForm("/account/password", url.Values{"current": {password}, "new": {"azertyuiop12"}}),
			`<p class="field-error" id="new-error">Ce mot de passe est trop facile à deviner`)
		shows("a wrong current and a guessable new password", br.postForm("/account/password", url.Values{"current": {"not my password"}, "new": {b.owner.Email + "1"}}),
			`id="current-error">Le mot de passe actuel est incorrect.</p>`, `id="new-error">Ce mot de passe est trop facile à deviner`)
		shows("a wrong current password", br.postForm("/account/password", url.Values{"current": {"not my password"}, "new": {"a brand new password"}}),
			`aria-invalid="true" aria-describedby="current-error"`, `<p class="field-error" id="current-error">Le mot de passe actuel est incorrect.</p>`)
		// Both wrong: both are told, and the count above says two.
		shows("a wrong current and a short new password", br.postForm("/account/password", url.Values{"current": {"not my password"}, "new": {"short"}}),
			`id="current-error">Le mot de passe actuel est incorrect.</p>`, `id="new-error">Le mot de passe doit compter de 12 à 72 caractères`,
			"Veuillez corriger les 2 champs ci-dessous.")

		// A refusal of a change in the team's table is one message above it.
		shows("the last owner", br.postForm("/team/"+b.owner.ID+"/role", url.Values{"role": {string(team.Viewer)}}),
			`<p class="error" role="alert">Le compte doit garder au moins un propriétaire.</p>`)
	})
}
