package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/google/uuid"
	"html"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/momopay/momopay/internal/dashboard"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testserver"
)

func TestLoginJSON(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.browser()
		r := br.postJSON("/auth/login", `{"email":"`+strings.ToUpper(b.owner.Email)+`","password":"`+password+`"}`)
		if r.status != http.StatusOK {
			t.Fatalf("login: %d %s", r.status, r.body)
		}
		var body struct {
			MerchantID string `json:"merchant_id"`
			User       struct {
				ID, Email, Role string
			} `json:"user"`
			ExpiresAt string `json:"expires_at"`
		}
		if err := json.Unmarshal([]byte(r.body), &body); err != nil || body.MerchantID != b.s.MerchantID ||
			body.User.ID != b.owner.ID || body.User.Role != "owner" || body.User.Email != b.owner.Email {
			t.Errorf("body %s (%v)", r.body, err)
		}
		// The one wire format of every time the service answers.
		if expires, err := time.Parse(payment.TimeFormat, body.ExpiresAt); err != nil || expires.Format(payment.TimeFormat) != body.ExpiresAt ||
			expires.Sub(time.Now()) < dashboard.AbsoluteLifetime-time.Minute {
			t.Errorf("expires_at %q (%v), want the session's end as %s", body.ExpiresAt, err, payment.TimeFormat)
		}
		c := r.cookie
		if c == nil || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
			t.Fatalf("cookie %+v", c)
		}
		if strings.Contains(r.body, c.Value) {
			t.Error("the token is in the body; it belongs in the cookie only")
		}

		// The token: HS256 under the secret kept in the database, with the
		// contract's claims.
		secret, err := b.s.App.Sessions.SessionSecret(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		claims := jwt.MapClaims{}
		tok, err := jwt.ParseWithClaims(c.Value, claims, func(*jwt.Token) (any, error) { return secret, nil },
			jwt.WithValidMethods([]string{"HS256"}))
		if err != nil || !tok.Valid {
			t.Fatalf("token: %v", err)
		}
		if claims["merchant_id"] != b.s.MerchantID || claims["user_id"] != b.owner.ID || claims["role"] != "owner" {
			t.Errorf("claims %v", claims)
		}
		perms, _ := claims["permissions"].([]any)
		var got []string
		for _, p := range perms {
			got = append(got, p.(string))
		}
		want := []string{}
		for _, p := range team.Owner.Permissions() {
			want = append(want, string(p))
		}
		if !slices.Equal(got, want) {
			t.Errorf("permissions %v, want %v", got, want)
		}
		iat, _ := claims.GetIssuedAt()
		exp, _ := claims.GetExpirationTime()
		if jti, _ := claims["jti"].(string); jti == "" || iat == nil || exp == nil || exp.Sub(iat.Time) != dashboard.IdleTimeout {
			t.Errorf("jti, iat, exp: %v", claims)
		}
		if !strings.Contains(br.get("/").body, "Overview") {
			t.Error("the cookie does not open the overview")
		}

		// A wrong password and an unknown email: the same 401.
		wrong := b.browser().postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"wrong password!"}`)
		unknown := b.browser().postJSON("/auth/login", `{"email":"nobody@example.com","password":"`+password+`"}`)
		if wrong.status != http.StatusUnauthorized || wrong.errorCode() != "UNAUTHORIZED" || wrong.cookie != nil {
			t.Errorf("wrong password: %d %s", wrong.status, wrong.body)
		}
		if unknown.status != wrong.status || unknown.body != wrong.body {
			t.Errorf("unknown email answered differently: %d %s vs %s", unknown.status, unknown.body, wrong.body)
		}
		// An email PostgreSQL could not even compare (a NUL) is just unknown.
		if r := b.browser().postJSON("/auth/login", `{"email":"a\u0000b@example.com","password":"`+password+`"}`); r.status != wrong.status || r.body != wrong.body {
			t.Errorf("an email with a NUL: %d %s", r.status, r.body)
		}
		if r := b.browser().postForm("/auth/login", url.Values{"email": {"a\x00b@example.com"}, "password": {password}}); r.status != http.StatusUnauthorized {
			t.Errorf("a form's email with a NUL: %d", r.status)
		}
		if r := b.browser().postJSON("/auth/login", `{"email":`); r.status != http.StatusBadRequest || r.errorCode() != "VALIDATION_ERROR" || !strings.Contains(r.body, `"fields":{"body":`) {
			t.Errorf("bad JSON: %d %s", r.status, r.body)
		}
	})
}

func TestLoginForm(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.browser()
		if r := br.get("/"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
			t.Fatalf("signed out overview: %d %s", r.status, r.header.Get("Location"))
		}
		page := br.get("/login")
		if page.status != http.StatusOK || !strings.Contains(page.body, `action="/auth/login"`) {
			t.Fatalf("login page: %d", page.status)
		}
		r := br.postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {"wrong password!"}})
		if r.status != http.StatusUnauthorized || !strings.Contains(r.body, "Wrong email or password") || r.cookie != nil {
			t.Errorf("wrong password: %d", r.status)
		}
		// An empty field is not a wrong password: the page says what is
		// missing.
		for _, form := range []url.Values{{}, {"email": {b.owner.Email}}, {"password": {password}}} {
			r := br.postForm("/auth/login", form)
			if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "Enter your email and your password.") || strings.Contains(r.body, "Wrong email") {
				t.Errorf("the form with %v: %d", form, r.status)
			}
		}
		// A form sent as multipart (enctype="multipart/form-data") is read too.
		var body bytes.Buffer
		mp := multipart.NewWriter(&body)
		mp.WriteField("email", b.owner.Email)
		mp.WriteField("password", password)
		mp.Close()
		req, _ := http.NewRequest("POST", b.s.URL+"/auth/login", &body)
		req.Header.Set("Content-Type", mp.FormDataContentType())
		if r := b.browser().do(req); r.status != http.StatusSeeOther || r.cookie == nil {
			t.Errorf("sign in with a multipart form: %d", r.status)
		}
		r = br.postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {password}})
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" || r.cookie == nil {
			t.Fatalf("sign in: %d %v", r.status, r.header)
		}
		if r := br.get("/"); r.status != http.StatusOK {
			t.Errorf("overview: %d", r.status)
		}

		// A page asked for while signed out opens once signed in, through
		// a wrong password and the language switch; never another site.
		other := b.browser()
		asked := "/transactions?status=SUCCESS"
		r = other.get(asked)
		want := "/login?next=" + url.QueryEscape(asked)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != want {
			t.Fatalf("signed out %s: %d %q, want 303 to %q", asked, r.status, r.header.Get("Location"), want)
		}
		if r := other.get(want + "&lang=fr"); r.header.Get("Location") != want {
			t.Errorf("the language switch lost the page asked for: %q", r.header.Get("Location"))
		}
		if page := other.get(want); !strings.Contains(html.UnescapeString(page.body), `name="next" value="`+asked+`"`) {
			t.Errorf("the login form does not carry the page asked for")
		}
		r = other.postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {"wrong password!"}, "next": {asked}})
		if !strings.Contains(html.UnescapeString(r.body), `name="next" value="`+asked+`"`) {
			t.Errorf("a wrong password lost the page asked for")
		}
		if r := other.postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {password}, "next": {asked}}); r.header.Get("Location") != asked {
			t.Errorf("signed in: led to %q, want %q", r.header.Get("Location"), asked)
		}
		if r := b.browser().postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {password}, "next": {"//evil.example/"}}); r.header.Get("Location") != "/" {
			t.Errorf("next=//evil.example/ led to %q, want /", r.header.Get("Location"))
		}
	})
}

func TestSessionRenewalAndLifetime(t *testing.T) {
	clock := testserver.NewClock(time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC))
	for _, engine := range testserver.Engines {
		t.Run(engine, func(t *testing.T) {
			b := setup(t, testserver.Options{DB: engine, Now: clock.Now})
			br := b.login(b.owner.Email)
			first := br.cookie

			// Used within a minute: the same token.
			clock.Advance(30 * time.Second)
			if r := br.get("/keys"); r.status != http.StatusOK || r.cookie != nil {
				t.Fatalf("early use: %d, cookie %v", r.status, r.cookie)
			}
			// Used later: renewed, with a later expiry.
			clock.Advance(20 * time.Minute)
			r := br.get("/keys")
			if r.status != http.StatusOK || r.cookie == nil || r.cookie.Value == first {
				t.Fatalf("renewal: %d, cookie %v", r.status, r.cookie)
			}
			if !r.cookie.HttpOnly || !r.cookie.Secure || r.cookie.SameSite != http.SameSiteStrictMode {
				t.Errorf("renewed cookie %+v", r.cookie)
			}
			// Still alive 40 minutes after sign-in, thanks to the renewal…
			clock.Advance(20 * time.Minute)
			if r := br.get("/keys"); r.status != http.StatusOK {
				t.Fatalf("after renewal: %d", r.status)
			}
			// …but the old token, past its own expiry, is refused.
			old := &browser{t: t, base: b.s.URL, cookie: first, headers: map[string]string{}}
			if !old.signedOut() {
				t.Error("a token past its exp still works")
			}
			// Idle longer than the timeout: ended.
			clock.Advance(dashboard.IdleTimeout + time.Minute)
			if !br.signedOut() {
				t.Error("an idle session still works")
			}

			// Kept busy, a session still ends at its absolute lifetime.
			br = b.login(b.owner.Email)
			for range int(dashboard.AbsoluteLifetime/(20*time.Minute)) - 1 {
				clock.Advance(20 * time.Minute)
				if r := br.get("/keys"); r.status != http.StatusOK {
					t.Fatalf("busy session ended early: %d", r.status)
				}
			}
			clock.Advance(21 * time.Minute)
			if !br.signedOut() {
				t.Error("a busy session outlived its absolute lifetime")
			}

			// A password change on a token due for renewal: one session
			// cookie in the answer (the new session's), not the renewal too.
			br = b.login(b.owner.Email)
			clock.Advance(2 * time.Minute)
			r = br.postForm("/account/password", url.Values{"current": {password}, "new": {"an entirely new password"}})
			n := 0
			for _, c := range r.header.Values("Set-Cookie") {
				if strings.HasPrefix(c, dashboard.SessionCookie+"=") {
					n++
				}
			}
			if r.status != http.StatusSeeOther || n != 1 || br.signedOut() {
				t.Errorf("password change: %d with %d session cookies, want 303 with 1 that keeps this browser signed in", r.status, n)
			}
		})
	}
}

// TestSessionEndedIsExplained: a request whose session cookie no longer
// opens a session (ended by signing out elsewhere, or a new password) is
// sent to the sign-in page, which says the session ended; a first visit,
// without a cookie, gets the page without it.
func TestSessionEndedIsExplained(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		const ended = "Your session has ended. Sign in again."
		first := b.browser()
		if r := first.get("/keys"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next=%2Fkeys" {
			t.Fatalf("a first visit: %d to %q", r.status, r.header.Get("Location"))
		}
		if page := first.get("/login?next=%2Fkeys"); strings.Contains(page.body, ended) {
			t.Error("a first visit is told its session ended")
		}

		br := b.login(b.owner.Email)
		kept := &browser{t: t, base: b.s.URL, cookie: br.cookie, headers: map[string]string{"Accept-Language": "fr"}}
		br.postForm("/auth/logout", nil)
		if r := kept.get("/keys"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next=%2Fkeys" {
			t.Fatalf("an ended session: %d to %q", r.status, r.header.Get("Location"))
		}
		if page := kept.get("/login?next=%2Fkeys"); !strings.Contains(page.body, "Votre session a pris fin. Connectez-vous à nouveau.") {
			t.Errorf("the sign-in page after an ended session does not say so:\n%s", page.body)
		}
		// Said once: the next showing of the page has no message.
		if page := kept.get("/login"); strings.Contains(page.body, "Votre session a pris fin") {
			t.Error("the message stays on the sign-in page")
		}
	})
}

func TestLogoutEndsTheSessionEverywhere(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		stolen := &browser{t: t, base: b.s.URL, cookie: br.cookie, headers: map[string]string{}}
		other := b.login(b.owner.Email)
		r := br.postForm("/auth/logout", nil)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" || r.cookie == nil || r.cookie.MaxAge >= 0 {
			t.Fatalf("logout: %d %v", r.status, r.header)
		}
		if !stolen.signedOut() {
			t.Error("a copy of the logged-out token still works")
		}
		if other.signedOut() {
			t.Error("logout ended another session of the same user")
		}
		// JSON callers get JSON.
		r = other.postJSON("/auth/logout", `{}`)
		if r.status != http.StatusOK || !strings.Contains(r.body, "signed_out") {
			t.Errorf("JSON logout: %d %s", r.status, r.body)
		}
	})
}

func TestPasswordChangeAndRemovalEndSessions(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		dev := b.addUser(b.s.MerchantID, "dev@example.com", team.Developer)
		laptop, phone := b.login(dev.Email), b.login(dev.Email)

		// Wrong current password: refused, nothing ends.
		r := laptop.postForm("/account/password", url.Values{"current": {"not my password"}, "new": {"a brand new password"}})
		if r.status != http.StatusUnprocessableEntity || phone.signedOut() {
			t.Fatalf("wrong current password: %d", r.status)
		}
		r = laptop.postForm("/account/password", url.Values{"current": {password}, "new": {"a brand new password"}})
		if r.status != http.StatusSeeOther {
			t.Fatalf("change password: %d %s", r.status, r.body)
		}
		if !phone.signedOut() {
			t.Error("the other session survived a password change")
		}
		if laptop.signedOut() {
			t.Error("the session that changed the password was ended")
		}
		if r := b.browser().postJSON("/auth/login", `{"email":"dev@example.com","password":"`+password+`"}`); r.status != http.StatusUnauthorized {
			t.Errorf("old password: %d", r.status)
		}

		// Removal by an owner ends the removed user's sessions at once.
		owner := b.login(b.owner.Email)
		if r := owner.postForm("/team/"+dev.ID+"/remove", nil); r.status != http.StatusSeeOther {
			t.Fatalf("remove: %d %s", r.status, r.body)
		}
		if !laptop.signedOut() {
			t.Error("a removed user's session still works")
		}
	})
}

func TestSessionAndKeyDoNotCross(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		// A session gives nothing on /v1, cookie or bearer token.
		req, _ := http.NewRequest("GET", b.s.URL+"/v1/transactions", nil)
		if r := br.do(req); r.status != http.StatusUnauthorized || r.errorCode() != "UNAUTHORIZED" {
			t.Errorf("cookie on /v1: %d %s", r.status, r.body)
		}
		req, _ = http.NewRequest("GET", b.s.URL+"/v1/transactions", nil)
		req.Header.Set("Authorization", "Bearer "+br.cookie)
		if r := b.browser().do(req); r.status != http.StatusUnauthorized {
			t.Errorf("session token as a bearer on /v1: %d", r.status)
		}
		// An API key gives nothing on the dashboard.
		for _, path := range []string{"/", "/keys", "/team", "/audit"} {
			req, _ = http.NewRequest("GET", b.s.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+b.s.APIKey)
			if r := b.browser().do(req); r.status != http.StatusUnauthorized || r.errorCode() != "UNAUTHORIZED" {
				t.Errorf("API key on %s: %d %s", path, r.status, r.body)
			}
		}
		req, _ = http.NewRequest("POST", b.s.URL+"/keys", nil)
		req.Header.Set("Authorization", "Bearer "+b.s.APIKey)
		if r := b.browser().do(req); r.status != http.StatusUnauthorized {
			t.Errorf("API key creating a key: %d", r.status)
		}
	})
}

func TestCrossOriginRequestsAreRefused(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		before := br.get("/keys").body
		br.headers["Origin"] = "http://evil.example"
		br.headers["Sec-Fetch-Site"] = "cross-site"
		for _, path := range []string{"/keys", "/auth/logout", "/team", "/account/language"} {
			if r := br.postForm(path, url.Values{"email": {"x@example.com"}, "role": {"owner"}, "password": {password}, "language": {"fr"}}); r.status != http.StatusForbidden {
				t.Errorf("cross-site POST %s: %d", path, r.status)
			}
		}
		delete(br.headers, "Origin")
		delete(br.headers, "Sec-Fetch-Site")
		if after := br.get("/keys").body; strings.Count(after, "<tr>") != strings.Count(before, "<tr>") {
			t.Error("a cross-site POST created a key")
		}
		if br.signedOut() {
			t.Error("a cross-site POST signed the user out")
		}
		// The same request from the dashboard's own origin works.
		br.headers["Origin"] = b.s.URL
		br.headers["Sec-Fetch-Site"] = "same-origin"
		if r := br.postForm("/keys", nil); r.status != http.StatusCreated {
			t.Errorf("same-origin POST: %d", r.status)
		}
	})
}

func TestLoginThrottle(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		// Failures the user's own sign-in then ends are forgotten.
		for range 9 {
			b.browser().postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"wrong password!"}`)
		}
		trusted := b.login(b.owner.Email) // it keeps its device cookie
		for i := range 10 {
			if r := b.browser().postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"wrong password!"}`); r.status != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d", i, r.status)
			}
		}
		// The account is locked for a while, even with the right password…
		r := b.browser().postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"`+password+`"}`)
		if r.status != http.StatusTooManyRequests || r.errorCode() != "RATE_LIMITED" {
			t.Errorf("after 10 failures: %d %s", r.status, r.body)
		}
		// It says when the next try is: one comes back every 30 s.
		var env struct {
			Error struct {
				RetryAfter int `json:"retry_after"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(r.body), &env)
		if secs, _ := strconv.Atoi(r.header.Get("Retry-After")); secs < 1 || secs > 30 || env.Error.RetryAfter != secs {
			t.Errorf("Retry-After %q and retry_after %d, want the same 1 to 30 seconds", r.header.Get("Retry-After"), env.Error.RetryAfter)
		}
		// A browser that signed in to the account before is not locked out
		// by the guesser's failures; its own failures count against it alone.
		right, wrong := `{"email":"`+b.owner.Email+`","password":"`+password+`"}`, `{"email":"`+b.owner.Email+`","password":"wrong password!"}`
		// A device cookie of the same name planted ahead of the user's own
		// (by a sibling subdomain: the cookie cannot be __Host-) does not
		// hide it.
		planted := b.browser()
		planted.headers["Cookie"] = "momopay_device=planted; momopay_device=" + trusted.others["momopay_device"]
		if r := planted.postJSON("/auth/login", right); r.status != http.StatusOK {
			t.Errorf("the user's own device cookie behind a planted one, while the account is throttled: %d %s", r.status, r.body)
		}
		if r := trusted.postJSON("/auth/login", right); r.status != http.StatusOK {
			t.Errorf("the user's own browser while the account is throttled: %d %s", r.status, r.body)
		}
		for i := range 10 {
			if r := trusted.postJSON("/auth/login", wrong); r.status != http.StatusUnauthorized {
				t.Fatalf("the trusted browser's failure %d: %d", i, r.status)
			}
		}
		if r := trusted.postJSON("/auth/login", right); r.status != http.StatusTooManyRequests {
			t.Errorf("the trusted browser after 10 failures of its own: %d, want 429", r.status)
		}
		// The sign-in page says so in words.
		page := b.browser().postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {password}})
		if want := "Try again in " + page.header.Get("Retry-After") + " seconds"; page.status != http.StatusTooManyRequests || !strings.Contains(page.body, want) {
			t.Errorf("the throttled sign-in page: %d, want it to say %q", page.status, want)
		}
		// …while another account signs in from the same address.
		other := b.addUser(b.s.MerchantID, "other@example.com", team.Viewer)
		b.login(other.Email)
	})
}

// TestLoginThrottleAtOnce: sign-ins sent at once are counted as they
// come, not once their passwords have been compared, so a burst cannot
// all get through while none has failed yet: one account gives 10 tries,
// one address 30.
func TestLoginThrottleAtOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		burst := func(n int, body func(i int) string) map[int]int {
			codes := make(chan int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { codes <- b.browser().postJSON("/auth/login", body(i)).status })
			}
			wg.Wait()
			close(codes)
			count := map[int]int{}
			for c := range codes {
				count[c]++
			}
			return count
		}
		one := burst(40, func(int) string { return `{"email":"` + b.owner.Email + `","password":"wrong password!"}` })
		if one[http.StatusUnauthorized] != 10 || one[http.StatusTooManyRequests] != 30 {
			t.Errorf("40 wrong sign-ins at once to one account: %v, want 10 compared and 30 refused", one)
		}
		// The address spent 10 of its 30 on them; a refill of one every
		// 3 s may add one while the test runs.
		many := burst(40, func(i int) string {
			return fmt.Sprintf(`{"email":"guess%d@example.com","password":"wrong password!"}`, i)
		})
		if n := many[http.StatusUnauthorized]; n < 20 || n > 21 || n+many[http.StatusTooManyRequests] != 40 {
			t.Errorf("40 wrong sign-ins at once to other accounts: %v, want 20 compared and the rest refused", many)
		}
		// They were compared one at a time (lines.go), and no line is
		// left once they are answered.
		if n := dashboard.SignInLinesInUse(b.s.App.Dashboard); n != 0 {
			t.Errorf("%d sign-in lines left after every sign-in was answered", n)
		}
	})
}

// TestPasswordChangeThrottle: wrong current passwords on the account page
// count against the account as failed sign-ins do, so a stolen session
// cannot guess the password at the server's speed.
func TestPasswordChangeThrottle(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		change := func(current string) answer {
			return br.postForm("/account/password", url.Values{"current": {current}, "new": {"an entirely new password"}})
		}
		for i := range 10 {
			if r := change("wrong password!"); r.status != http.StatusUnprocessableEntity {
				t.Fatalf("wrong current password %d: %d", i, r.status)
			}
		}
		r := change(password)
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" ||
			!strings.Contains(r.body, "Try again in "+r.header.Get("Retry-After")+" seconds") {
			t.Errorf("after 10 wrong current passwords, the right one: %d, Retry-After %q; want 429 saying when", r.status, r.header.Get("Retry-After"))
		}
		if u, _ := b.s.App.Users.CheckPassword(context.Background(), b.owner.Email, password, false); u == nil {
			t.Error("the password changed while the account was throttled")
		}
		if r := b.browser().postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"`+password+`"}`); r.status != http.StatusTooManyRequests {
			t.Errorf("sign-in after 10 wrong current passwords: %d, want 429", r.status)
		}
	})
}

// TestPasswordChangeTriesThrottled: tries with the right current password
// and a new one that is refused also spend from the user's budget, since
// each costs a bcrypt comparison: ten at once, then one every 30 s, which
// is what a person needs. Before, only wrong current passwords counted,
// and the form could be posted as fast as the server answered. Signing in
// is not affected: the right password is no guess.
func TestPasswordChangeTriesThrottled(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		for i := range 10 {
			if r := br.postForm("/account/password", url.Values{"current": {password}, "new": {"too short"}}); r.status != http.StatusUnprocessableEntity {
				t.Fatalf("refused new password %d: %d", i, r.status)
			}
		}
		r := br.postForm("/account/password", url.Values{"current": {password}, "new": {"an entirely new password"}})
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
			t.Errorf("the 11th try: %d, Retry-After %q; want 429", r.status, r.header.Get("Retry-After"))
		}
		if u, _ := b.s.App.Users.CheckPassword(context.Background(), b.owner.Email, password, false); u == nil {
			t.Error("the password changed while the user was throttled")
		}
		b.login(b.owner.Email) // signing in still works
	})
}

// TestOthersCannotBlockAPasswordChange: failed sign-ins to an account
// from another browser, which anyone who knows its email can send, throttle
// sign-ins from unknown browsers but not the signed-in user's password
// change. Before, they shared one budget, and one failed sign-in every 30 s
// kept the user from changing the password for as long as the sender liked.
func TestOthersCannotBlockAPasswordChange(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		stranger := b.browser()
		for range 11 {
			stranger.postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"a guessed password"}`)
		}
		if r := stranger.postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"a guessed password"}`); r.status != http.StatusTooManyRequests {
			t.Fatalf("the stranger's 12th sign-in: %d, want 429", r.status)
		}
		r := br.postForm("/account/password", url.Values{"current": {password}, "new": {"an entirely new password"}})
		if r.status != http.StatusSeeOther {
			t.Fatalf("the owner's password change while strangers are throttled: %d, want 303\n%.2000s", r.status, r.body)
		}
		if u, _ := b.s.App.Users.CheckPassword(context.Background(), b.owner.Email, "an entirely new password", false); u == nil {
			t.Error("the password did not change")
		}
	})
}

// TestUnknownPages: a browser asking for a page that does not exist gets
// the dashboard's 404 page with its headers; a page asked with a method it
// does not take gets 405 with Allow; API paths, and clients that do not
// ask for HTML, keep the API's JSON 404.
func TestUnknownPages(t *testing.T) {
	b := setup(t, testserver.Options{})
	br := b.browser()
	br.headers["Accept"] = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	page := func(r answer) bool {
		return strings.HasPrefix(r.header.Get("Content-Type"), "text/html") &&
			r.header.Get("Content-Security-Policy") != "" && r.header.Get("X-Frame-Options") == "DENY"
	}
	if r := br.get("/no-such-page"); r.status != http.StatusNotFound || !page(r) {
		t.Errorf("GET /no-such-page from a browser: %d, Content-Type %q, CSP %q", r.status, r.header.Get("Content-Type"), r.header.Get("Content-Security-Policy"))
	}
	owner := b.login(b.owner.Email)
	// Signed in, the 404 page keeps the dashboard's menu; signed out, it
	// shows none.
	owner.headers["Accept"] = br.headers["Accept"]
	if r := owner.get("/no-such-page"); r.status != http.StatusNotFound || !page(r) || !strings.Contains(r.body, `<nav class="side"`) {
		t.Errorf("GET /no-such-page signed in: %d, menu shown %v", r.status, strings.Contains(r.body, `<nav class="side"`))
	}
	if r := br.get("/no-such-page"); strings.Contains(r.body, `<nav class="side"`) {
		t.Error("the 404 page shows the menu to a browser that is not signed in")
	}
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/auth/login", "POST"},
		{"DELETE", "/keys", "GET, POST, HEAD"},
		{"PUT", "/webhooks/wh_1/delete", "GET, POST, HEAD"},
		{"POST", "/transactions", "GET, HEAD"},
		{"POST", "/", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(c.method, b.s.URL+c.path, nil)
		r := owner.do(req)
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != c.allow || !page(r) {
			t.Errorf("%s %s: %d, Allow %q, Content-Type %q; want 405 page, Allow %q", c.method, c.path, r.status, r.header.Get("Allow"), r.header.Get("Content-Type"), c.allow)
		}
	}
	if r := br.get("/v1/no-such-thing"); r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" {
		t.Errorf("an API path from a browser: %d %s, want the API's JSON 404", r.status, r.body)
	}
	if r := b.browser().get("/no-such-page"); r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" {
		t.Errorf("without Accept: text/html: %d %s, want the API's JSON 404", r.status, r.body)
	}
	// A static file that does not exist is answered the same way.
	if r := br.get("/static/no-such-file.css"); r.status != http.StatusNotFound || !page(r) {
		t.Errorf("a missing static file from a browser: %d, Content-Type %q, want the 404 page", r.status, r.header.Get("Content-Type"))
	}
	if r := b.browser().get("/static/no-such-file.css"); r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" {
		t.Errorf("a missing static file without Accept: text/html: %d %s, want the JSON 404", r.status, r.body)
	}
}

func TestSecurityHeaders(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, path := range []string{"/login", "/"} {
		r := b.login(b.owner.Email).get(path)
		if path == "/login" {
			r = b.browser().get(path)
		}
		h := r.header
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s CSP %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") == "" || h.Get("Cache-Control") != "no-store" || h.Get("X-Request-Id") == "" ||
			h.Get("Strict-Transport-Security") != "max-age=31536000" {
			t.Errorf("%s headers %v", path, h)
		}
	}
}

// TestJSONCallersGetTheEnvelope: a script that asks for JSON gets every
// refusal in the contract's error envelope, as /v1 answers, rather than a
// redirect to the sign-in page or an HTML page: no session, a role that
// does not allow the change, another merchant's id, a method the path
// does not take.
func TestJSONCallersGetTheEnvelope(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		b.addUser(b.s.MerchantID, "viewer@example.td", team.Viewer)
		script := func(br *browser) *browser {
			br.headers["Accept"] = "application/json"
			return br
		}
		anonymous, viewer, owner := script(b.browser()), script(b.login("viewer@example.td")), script(b.login(b.owner.Email))
		put, err := http.NewRequest(http.MethodPut, b.s.URL+"/keys", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name   string
			answer answer
			status int
			code   string
		}{
			{"no session", anonymous.postForm("/keys", nil), http.StatusUnauthorized, "UNAUTHORIZED"},
			{"no session, a page", anonymous.get("/transactions"), http.StatusUnauthorized, "UNAUTHORIZED"},
			{"a viewer's change", viewer.postForm("/keys", nil), http.StatusForbidden, "FORBIDDEN"},
			{"an id of no key of the merchant's", owner.postForm("/keys/"+uuid.NewString()+"/revoke", nil), http.StatusNotFound, "NOT_FOUND"},
			{"another method", owner.do(put), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
			{"an answer to no payment of the merchant's", owner.postForm("/phone/"+uuid.NewString()+"/answer",
				url.Values{"number": {"+23566000001"}, "answer": {"refuse"}}), http.StatusNotFound, "NOT_FOUND"},
			{"a JSON body for a form", owner.postJSON("/team", `{"email":"json@example.td","role":"viewer","password":"a long password"}`),
				http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
			{"a form over 64 KiB", owner.postForm("/team", url.Values{"email": {strings.Repeat("a", 70<<10)}}),
				http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
		} {
			if c.answer.status != c.status || c.answer.errorCode() != c.code || !strings.HasPrefix(c.answer.header.Get("Content-Type"), "application/json") {
				t.Errorf("%s: %d %q (%s), want %d %s in the envelope", c.name, c.answer.status, c.answer.errorCode(), c.answer.header.Get("Content-Type"), c.status, c.code)
			}
		}
	})
}
