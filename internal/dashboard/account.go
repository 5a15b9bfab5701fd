package dashboard

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/momopay/momopay/internal/team"
)

type accountPage struct {
	layout
	// Error is a catalogue key for a refusal of the whole form (too many
	// tries); Fields, a key for each field in error.
	Error  string
	Fields map[string]string
	Wait   int // seconds until another try, for a throttled one
}

func (d *Dashboard) handleAccount() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.render(w, r, http.StatusOK, "account", &accountPage{layout: layout{Title: "account.title", Nav: "account"}})
	})
}

// handlePassword changes the user's own password after checking the
// current one. Every session of the user ends (the store revokes them in
// the same transaction); this browser gets a new one.
func (d *Dashboard) handlePassword() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		again := func(status int, msg string, fields map[string]string) {
			d.render(w, r, status, "account", &accountPage{layout: layout{Title: "account.title", Nav: "account"}, Error: msg, Fields: fields})
		}
		if err := parseForm(w, r); err != nil {
			if wantsJSON(r) {
				d.badForm(w, r, err)
				return
			}
			again(formStatus(err), "form.unreadable", nil)
			return
		}
		now := d.now()
		// Password changes are throttled per user, on a budget of their
		// own: failed sign-ins, which anyone who knows the email can make,
		// must not keep the user from changing the password. Every try
		// spends from it, not only wrong current passwords: each costs a
		// bcrypt comparison and a strength estimate, and a signed-in user
		// posting the form with the right password could otherwise keep
		// a core busy. Each wrong one also spends from the account's
		// sign-in budget (without waiting on it), so a stolen session is
		// no way to guess the password beyond what the sign-in form allows.
		wait, giveBack := d.byAccount.Reserve(r.Context(), "password change "+s.User.ID, now)
		if wait > 0 {
			secs := retryAfter(w, wait)
			d.render(w, r, http.StatusTooManyRequests, "account", &accountPage{layout: layout{Title: "account.title", Nav: "account"},
				Error: throttled(secs), Wait: secs})
			return
		}
		u, err := d.accounts.CheckPassword(r.Context(), s.User.Email, r.PostForm.Get("current"), false)
		if err != nil {
			giveBack()
			d.fail(w, r, err)
			return
		}
		if u == nil || u.ID != s.User.ID {
			d.byAccount.Reserve(r.Context(), s.User.Email, now) // a guess, kept: nothing to give back
			fields := map[string]string{"current": "account.wrong"}
			// Both fields are told at once, so the second try need not
			// fail on the other one.
			next := r.PostForm.Get("new")
			if msg := team.CheckPassword(next, s.User.Email, s.MerchantName); msg != "" {
				fields["new"] = passwordProblem(next, msg)
			}
			again(http.StatusUnprocessableEntity, "account.wrong", fields)
			return
		}
		credential, err := d.accounts.SetPassword(r.Context(), s.MerchantID, s.User.ID, u.Credential, r.PostForm.Get("new"), now)
		if errors.Is(err, team.ErrPasswordChanged) {
			again(http.StatusUnprocessableEntity, "account.wrong", map[string]string{"current": "account.wrong"})
			return
		}
		if msg, fields, ok := userProblems(err, r.PostForm.Get("new")); ok {
			if f, ok := fields["password"]; ok {
				fields = map[string]string{"new": f}
			}
			again(http.StatusUnprocessableEntity, msg, fields)
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.Audit(r.Context(), team.ActionPassword, s.User.Email)
		row := &team.Session{JTI: rand.Text(), UserID: s.User.ID, MerchantID: s.MerchantID,
			CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(AbsoluteLifetime)}
		if err := d.sessions.Start(r.Context(), *row, credential); err != nil {
			d.fail(w, r, err)
			return
		}
		if err := d.issue(w, row, &s.User, now); err != nil {
			d.fail(w, r, err)
			return
		}
		d.redirectWithFlash(w, r, "/account", "account.changed", "")
	})
}

// handleLanguage saves the user's language ("" follows the browser) and
// returns to the page the switch was on.
func (d *Dashboard) handleLanguage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		if _, sent := r.PostForm["language"]; !sent {
			// A form without the field must not pass for "follow the
			// browser" (an empty value).
			d.badForm(w, r, nil)
			return
		}
		lang := r.PostForm.Get("language")
		if team.CheckLanguage(lang) != "" {
			// Not one the page offers: refused, rather than taken for
			// "follow the browser", which would wipe the user's choice.
			d.badForm(w, r, nil)
			return
		}
		if err := d.accounts.SetLanguage(r.Context(), s.MerchantID, s.User.ID, lang); err != nil {
			d.fail(w, r, err)
			return
		}
		// The sign-in page and the pages of an ended session follow the
		// choice too, not one made before it.
		setLanguageCookie(w, lang)
		back := r.PostForm.Get("return")
		if !localPath(back) {
			back = "/account"
		}
		d.redirectWithFlash(w, r, back, "account.langsaved", "")
	})
}

// localPath admits only a path of this site ("/keys"), never another
// site ("//evil.example", "https://..."). Browsers drop tabs and line
// breaks from a URL and read a backslash as a slash, so "/\t/evil.example"
// or "/\\evil.example" would lead away too: control characters and
// backslashes are refused anywhere in it.
func localPath(p string) bool {
	if len(p) == 0 || len(p) >= 512 || p[0] != '/' || (len(p) > 1 && p[1] == '/') || strings.ContainsRune(p, '\\') {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return false
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == ""
}
