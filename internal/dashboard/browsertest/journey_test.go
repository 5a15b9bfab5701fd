package browsertest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/momopay/momopay/client"
	"github.com/momopay/momopay/internal/dashboard"
	"github.com/momopay/momopay/internal/testserver"
)

// TestMerchantJourney walks a merchant through the dashboard in chromium, on
// every database engine: on the first with every page checked by axe-core,
// the width check and a screenshot; on the others with JavaScript off, as
// every main action must work without it. The walk: sign in, make an API key and see it once, take a
// payment through /v1 with it, follow it to SUCCESS and its webhook at a
// local receiver, manage the webhook endpoint, revoke the key, switch to
// French, sign out, and find nothing behind the back button. Every page
// passes axe-core and fits a 360 px screen; each is photographed.
func TestMerchantJourney(t *testing.T) {
	for i, engine := range testserver.Engines {
		t.Run(engine, func(t *testing.T) { merchantJourney(t, engine, i > 0) })
	}
}

// journey is the state a merchant's walk builds up.
type journey struct {
	t        *testing.T
	b        *Browser
	srv      *testserver.Server
	rc       *receiver
	email    string
	password string
	key      string // the API key made in the dashboard
	txID     string // the payment made with it
	ref      string
	// secret and oldSecret are the webhook endpoint's signing secrets,
	// before and after rotation.
	secret, oldSecret string
}

func merchantJourney(t *testing.T, engine string, second bool) {
	b := newBrowser(t, "", engine) // first: skips before a server starts
	if second {
		b.pagesOnly = true
		b.withoutJavaScript()
	}
	srv := testserver.Start(t, testserver.Options{DB: engine})
	b.base = srv.URL
	j := &journey{t: t, b: b, srv: srv, rc: newReceiver(t),
		email: "awa@boutique-abeche.td", password: "correct horse battery staple"}
	if _, err := srv.App.Merchants.Create(context.Background(), "Boutique Abéché", j.email, j.password, time.Now()); err != nil {
		t.Fatalf("create the merchant: %v", err)
	}

	j.signIn()
	j.createKey()
	j.addEndpoint()
	j.pay()
	j.findPayment()
	j.confirmOnPhone()
	j.sendTest()
	j.rotate()
	j.resend()
	j.otherPages()
	j.revokeKey()
	j.french()
	j.signOut()
}

// signIn: the dashboard sends a stranger to the login page; the form signs
// in with a cookie a script cannot read, and opens the page asked for.
func (j *journey) signIn() {
	t, b := j.t, j.b
	b.open("/keys")
	if p := b.path(); !strings.HasPrefix(p, "/login") {
		t.Fatalf("a signed-out visit to /keys landed on %s; want the login page", p)
	}
	b.check("login")
	b.checkNarrow("login")

	b.fill("#email", j.email)
	b.fill("#password", "not the password")
	b.submit(`form[action="/auth/login"] button[type=submit]`)
	if !b.has(`form[action="/auth/login"] .error, .error[role=alert]`) || strings.Contains(b.bodyText(), "Boutique") {
		t.Fatalf("a wrong password did not give the login form with an error; the page shows:\n%s", b.bodyText())
	}
	// The password is to be typed again: the focus is there, and the
	// field is described by the message, which a screen reader reads.
	if f := b.focused(); f != "input#password" || !b.has(`#password[aria-describedby="login-message"]`) || !b.has(`#login-message[role=alert]`) {
		t.Errorf("after a wrong password the focus is on %q; want the password field, described by the message", f)
	}
	b.check("login-failed")

	b.fill("#email", j.email)
	b.fill("#password", j.password)
	b.submit(`form[action="/auth/login"] button[type=submit]`)
	// Through the failed try, the form kept the page asked for.
	if p := b.path(); p != "/keys" {
		t.Fatalf("signing in landed on %s; want /keys, the page asked for\n%s", p, b.bodyText())
	}
	b.open("/")
	b.check("overview")
	b.checkNarrow("overview")

	session := j.sessionCookie()
	switch {
	case session == nil:
		t.Errorf("no %s cookie after signing in", dashboard.SessionCookie)
	case !session.HTTPOnly || !session.Secure || session.SameSite != network.CookieSameSiteStrict:
		t.Errorf("the session cookie is HttpOnly=%v Secure=%v SameSite=%s; want HttpOnly, Secure, Strict", session.HTTPOnly, session.Secure, session.SameSite)
	case strings.Count(session.Value, ".") != 2:
		t.Errorf("the session cookie does not hold a JWT (header.claims.signature)")
	}
	if v := run(b, "read document.cookie", chromedp.Evaluate[string](`document.cookie`)); session != nil && strings.Contains(v, session.Value) {
		t.Errorf("the session cookie is readable by scripts: %q", v)
	}
}

// sessionCookie is the browser's dashboard session cookie, or nil.
func (j *journey) sessionCookie() *network.Cookie {
	b := j.b
	cookies := run(b, "read cookies", func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		r, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base}})
		return r.Cookies, err
	})
	for _, c := range cookies {
		if c.Name == dashboard.SessionCookie {
			return c
		}
	}
	return nil
}

// createKey: a key is shown once, on its own page, and neither the list nor
// the back button shows it again.
func (j *journey) createKey() {
	t, b := j.t, j.b
	b.open("/keys")
	b.check("keys")
	b.checkNarrow("keys")
	token := run(b, "read the form's token", chromedp.Value(chromedp.CSS(`main form[action="/keys"] input[name=request]`)))
	b.submit(`main form[action="/keys"] button[type=submit]`)
	j.key = run(b, "read the new key", chromedp.Value(chromedp.CSS("#new-key")))
	if len(j.key) < 20 {
		t.Fatalf("the key page shows %q; want the new API key", j.key)
	}
	b.check("key-created")
	b.checkNarrow("key-created")
	// The copy button is app.js's: shown with JavaScript, absent without.
	if hidden := run(b, "look at the copy button", chromedp.Evaluate[bool](`document.querySelector('button[data-copy="new-key"]').hidden`)); hidden != b.noScript {
		t.Errorf("the key's copy button hidden=%v with JavaScript off=%v", hidden, b.noScript)
	}

	b.submit(`main a[href="/keys"]`)
	if strings.Contains(run(b, "read the page", chromedp.OuterHTML(chromedp.CSS("html"))), j.key) {
		t.Fatalf("the key list shows the whole key")
	}
	b.do("go back to the key's page", chromedp.NavigateBack())
	if html := run(b, "read the page", chromedp.OuterHTML(chromedp.CSS("html"))); strings.Contains(html, j.key) {
		t.Fatalf("the back button shows the key again at %s", b.path())
	}

	// The same form sent again (as a reload of the key's page does) makes
	// no second key, and says which key the first sending made.
	b.open("/keys")
	b.do("put back the first form's token", chromedp.SetValue(chromedp.CSS(`main form[action="/keys"] input[name=request]`), token))
	if resp := b.submit(`main form[action="/keys"] button[type=submit]`); resp == nil || resp.Status != http.StatusConflict {
		t.Fatalf("the form sent again: %v; want 409", resp)
	}
	if txt := b.bodyText(); strings.Contains(txt, j.key) || !strings.Contains(txt, j.key[:len("service_live_")+6]+"…") {
		t.Fatalf("the page for the form sent again shows the key, or not its prefix:\n%s", txt)
	}
	b.check("key-again")
	b.checkNarrow("key-again")
}

// pay makes a payment through /v1 with the dashboard's key.
func (j *journey) pay() {
	tx := j.createPayment(payerNumber, 1500)
	j.txID, j.ref = tx.ID, tx.Reference
}

// revokeKey: revoking asks first, then the key stops working on /v1.
func (j *journey) revokeKey() {
	t, b := j.t, j.b
	b.open("/keys")
	b.submit(`main a[href$="/revoke"]`)
	b.check("key-revoke")
	b.checkNarrow("key-revoke")
	b.submit(`main form[action$="/revoke"] button[type=submit]`)
	b.check("keys-revoked")
	if b.has(`main a[href$="/revoke"]`) {
		t.Errorf("the key list still offers to revoke the revoked key:\n%s", b.bodyText())
	}
	_, err := client.New(j.key, client.WithBaseURL(j.srv.URL), client.WithMaxRetries(0)).
		GetTransaction(context.Background(), j.txID)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
		t.Errorf("the revoked key on /v1: %v; want 401", err)
	}
}

// otherPages visits the owner's remaining pages.
func (j *journey) otherPages() {
	b := j.b
	for _, p := range []struct{ path, name string }{
		{"/", "overview-paid"}, {"/transactions", "transactions-all"}, {"/reconciliation", "reconciliation"},
		{"/team", "team"}, {"/audit", "audit"}, {"/account", "account"},
	} {
		if status := b.open(p.path); status != http.StatusOK {
			j.t.Errorf("GET %s: %d", p.path, status)
			continue
		}
		b.check(p.name)
		b.checkNarrow(p.name)
	}
	if txt := b.bodyText(); !strings.Contains(txt, j.email) {
		j.t.Errorf("the account page does not name the signed-in user %s", j.email)
	}
	// Every focus ring, on the menu, the buttons and the tables, can be
	// seen: the keys page has each of them within its first stops.
	b.open("/keys")
	b.checkFocusRings("keys", 24)
	// A page that does not exist: the dashboard's 404 page, not the API's JSON.
	if status := b.open("/no-such-page"); status != http.StatusNotFound || !b.has("main h1") {
		j.t.Errorf("GET /no-such-page: %d, want the 404 page:\n%s", status, b.bodyText())
	}
	b.check("not-found")
	b.open("/account")
	b.open("/audit")
	if txt := b.bodyText(); !strings.Contains(txt, j.key[:8]) {
		j.t.Errorf("the audit log does not mention the key created and revoked (prefix %s):\n%s", j.key[:8], txt)
	}
}

// french: the language switch in the menu turns every page French, and it
// is remembered.
func (j *journey) french() {
	t, b := j.t, j.b
	b.open("/keys")
	b.submit(`nav.side form.lang-switch button[type=submit]`)
	if lang := run(b, "read the language", chromedp.Evaluate[string](`document.documentElement.lang`)); lang != "fr" {
		t.Fatalf("after the switch to French the page's lang is %q", lang)
	}
	b.open("/keys")
	if h := b.text("main h1"); h != "Clés d'API" {
		t.Errorf("the keys page in French is titled %q; want %q", h, "Clés d'API")
	}
	b.check("keys-fr")
	b.checkNarrow("keys-fr")
	b.open("/")
	if h := b.text("main h1"); !strings.Contains(h, "Vue d'ensemble") {
		t.Errorf("the overview in French is titled %q", h)
	}
	b.check("overview-fr")
	b.checkNarrow("overview-fr")
	// The French words are longer: the endpoint's row, with its rotated
	// secret's note and five actions, once pushed its last two out of view.
	b.open("/webhooks")
	b.check("webhooks-fr")
}

// signOut: after signing out the back button shows the login page, not the
// page the merchant left.
func (j *journey) signOut() {
	t, b := j.t, j.b
	b.open("/keys")
	b.submit(`nav.side form.signout button[type=submit]`)
	if p := b.path(); !strings.HasPrefix(p, "/login") {
		t.Fatalf("signing out landed on %s; want the login page", p)
	}
	b.check("signed-out")
	if c := j.sessionCookie(); c != nil {
		t.Errorf("signing out left the session cookie in the browser")
	}
	b.do("press the back button", chromedp.NavigateBack())
	txt := b.bodyText()
	if strings.Contains(txt, "Boutique Abéché") || strings.Contains(txt, j.email) || b.has("nav.side") {
		t.Errorf("after signing out, the back button shows the merchant's page %s:\n%s", b.path(), txt)
	}
	if !b.has(`form[action="/auth/login"]`) {
		t.Errorf("after signing out, the back button shows %s without the login form:\n%s", b.path(), txt)
	}
	if status := b.open("/keys"); !strings.HasPrefix(b.path(), "/login") {
		t.Errorf("after signing out, /keys answered %d at %s; want the login page", status, b.path())
	}
}
