package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// Signing in: the sign-in page, the sign-in itself (form or JSON) and its
// throttles. Sessions, their cookie and signing out are in session.go.

// loginPage is the sign-in form.
type loginPage struct {
	layout
	Email   string
	Message string // catalogue key of the error, if any
	Wait    int    // seconds until another try, for a throttled one
	// Next is the page to open once signed in (a local path), "" for the
	// overview.
	Next string
}

// loginFor is the sign-in page for a request that needs a session: a page
// asked for (GET) is opened again once signed in; a form posted without a
// session is not resent, so it leads to the overview.
func loginFor(r *http.Request) string {
	if r.Method != http.MethodGet || r.URL.Path == "/" || !localPath(r.URL.RequestURI()) {
		return "/login"
	}
	return loginPath(r.URL.RequestURI())
}

// loginPath is the sign-in page that opens next (a local path) once
// signed in; "" leads to the overview.
func loginPath(next string) string {
	if next == "" {
		return "/login"
	}
	return "/login?" + url.Values{"next": {next}}.Encode()
}

// afterLogin is where a sign-in leads: next when it is a path of this
// site, else the overview.
func afterLogin(next string) string {
	if localPath(next) {
		return next
	}
	return "/"
}

// setLanguageCookie remembers the browser's language for the pages shown
// without a session (sign-in, and the error pages of one that ended); ""
// forgets it, for the browser's own Accept-Language.
func setLanguageCookie(w http.ResponseWriter, lang string) {
	c := &http.Cookie{Name: langCookie, Value: lang, Path: "/", MaxAge: 365 * 24 * 3600,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}
	if lang == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func (d *Dashboard) handleLoginPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next := r.URL.Query().Get("next")
		if !localPath(next) {
			next = ""
		}
		if lang := r.URL.Query().Get("lang"); lang == english || lang == french {
			setLanguageCookie(w, lang)
			http.Redirect(w, r, loginPath(next), http.StatusSeeOther)
			return
		}
		if s, err := d.current(w, r); err == nil && s != nil {
			http.Redirect(w, r, afterLogin(next), http.StatusSeeOther)
			return
		}
		d.render(w, r, http.StatusOK, "login", &loginPage{layout: layout{Title: "login.title"}, Next: next})
	})
}

// maxLoginBody bounds the sign-in request: an email and a password.
const maxLoginBody = 4 << 10

// handleLogin signs in with an email and a password, sent as JSON (200
// and a small JSON body, or 401 in the contract's envelope) or from the
// form (303 to the page it was asked for, or the overview; or the form
// again with one message). An
// unknown email and a wrong password get the same answer.
func (d *Dashboard) handleLogin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		asJSON := mt == "application/json"
		if !asJSON && mt != "application/x-www-form-urlencoded" && mt != "multipart/form-data" {
			writeProblem(w, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "send the email and password as application/json or a form")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
		var in struct {
			Email    string `json:"email"`
			Password string `json:"password"`
		}
		next := "" // the form's page to open once signed in
		if asJSON {
			b, err := io.ReadAll(r.Body)
			if err == nil {
				err = json.Unmarshal(b, &in)
			}
			if formStatus(err) == http.StatusRequestEntityTooLarge {
				tooLarge(w)
				return
			}
			if err != nil {
				writeInvalid(w, "the body must be a JSON object with email and password", "body", "must be a JSON object with email and password")
				return
			}
		} else {
			read := r.ParseForm
			if mt == "multipart/form-data" { // a form with enctype multipart: read it too
				read = func() error { return r.ParseMultipartForm(maxLoginBody) }
			}
			if err := read(); formStatus(err) == http.StatusRequestEntityTooLarge {
				tooLarge(w)
				return
			} else if err != nil {
				writeInvalid(w, "unreadable form", "body", "could not be read as a form")
				return
			}
			in.Email, in.Password = r.PostForm.Get("email"), r.PostForm.Get("password")
			next = r.PostForm.Get("next")
			if !localPath(next) {
				next = ""
			}
		}
		email := team.NormalizeEmail(in.Email)
		// addr is for the audit log; client, the address throttle's key.
		now, addr, client := d.now(), clientAddress(r), api.ClientKey(r.RemoteAddr)
		waitSecs := 0 // when throttled
		refuse := func(status int, key, message string) {
			if asJSON {
				writeProblem(w, status, "UNAUTHORIZED", message)
				return
			}
			d.render(w, r, status, "login", &loginPage{layout: layout{Title: "login.title"}, Email: email, Message: key, Wait: waitSecs, Next: next})
		}
		if len(email) > 254 || len(in.Password) > 1024 {
			refuse(http.StatusUnauthorized, "login.failed", "wrong email or password")
			return
		}
		// The form sent without an email or a password (a browser's own
		// check is off, or was got round) is not a wrong password: it is
		// not tried, nor counted against the account.
		if !asJSON && (email == "" || in.Password == "") {
			refuse(http.StatusUnprocessableEntity, "login.required", "")
			return
		}
		device := d.trustedDevice(r, email)
		attempts := attemptsKey(email, device)
		// Each attempt is spent before the password is compared, from the
		// address and from the account: sign-ins sent at once cannot all
		// get through while none has failed yet.
		wait, addrBack := d.byAddress.Reserve(r.Context(), client, now)
		var accountBack func()
		if wait == 0 {
			if wait, accountBack = d.byAccount.Reserve(r.Context(), attempts, now); wait > 0 {
				addrBack()
			}
		}
		if wait > 0 {
			retry := retryAfter(w, wait)
			if asJSON {
				writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{"code": "RATE_LIMITED",
					"message": "too many failed sign-ins; retry after retry_after seconds", "status": http.StatusTooManyRequests, "retry_after": retry}})
				return
			}
			waitSecs = retry
			refuse(http.StatusTooManyRequests, throttled(retry), "")
			return
		}
		// The address's sign-ins are compared one at a time (lines.go),
		// and one from a browser that signed in to the account before
		// goes ahead of others' (store.hashGate).
		u, err := d.checkInLine(r.Context(), client, email, in.Password, device != "")
		if err != nil {
			addrBack()
			accountBack()
			d.fail(w, r, err)
			return
		}
		if u == nil {
			if known, err := d.accounts.ByEmail(r.Context(), email); err == nil {
				d.audit(r.Context(), team.AuditEntry{MerchantID: known.MerchantID, Email: email,
					Action: team.ActionSignInFailed, Target: email, Address: addr, At: now})
			}
			refuse(http.StatusUnauthorized, "login.failed", "wrong email or password")
			return
		}
		// The right password: no guess, whatever happens next.
		addrBack()
		d.byAccount.Forget(r.Context(), attempts)
		row := &team.Session{JTI: rand.Text(), UserID: u.ID, MerchantID: u.MerchantID,
			CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(AbsoluteLifetime)}
		if err := d.sessions.Start(r.Context(), *row, u.Credential); errors.Is(err, team.ErrNotFound) {
			// The password was changed, or the user removed, while it
			// was being checked.
			refuse(http.StatusUnauthorized, "login.failed", "wrong email or password")
			return
		} else if err != nil {
			d.fail(w, r, err)
			return
		}
		if err := d.issue(w, row, u, now); err != nil {
			d.fail(w, r, err)
			return
		}
		if err := d.trustDevice(w, email, device, now); err != nil {
			d.fail(w, r, err)
			return
		}
		// Sign-ins are rare (and throttled): each clears the rows of
		// sessions that ended over a day ago, which no request can use.
		if _, err := d.sessions.Prune(r.Context(), now.Add(-24*time.Hour)); err != nil {
			d.log.Warn("prune sessions", "err", err)
		}
		d.audit(r.Context(), team.AuditEntry{MerchantID: u.MerchantID, UserID: u.ID, Email: u.Email,
			Action: team.ActionSignIn, Target: u.Email, Address: addr, At: now})
		if !asJSON {
			http.Redirect(w, r, afterLogin(next), http.StatusSeeOther)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"user":        map[string]any{"id": u.ID, "email": u.Email, "role": u.Role, "permissions": u.Role.Permissions()},
			"merchant_id": u.MerchantID, "expires_at": row.ExpiresAt.UTC().Format(payment.TimeFormat),
		})
	})
}

// checkInLine compares email's password once the client address's line
// lets it through (lines.go): the other sign-ins of that address wait
// there, not in the queue for a hashing slot that every address shares.
func (d *Dashboard) checkInLine(ctx context.Context, client, email, password string, knownDevice bool) (*team.User, error) {
	done, err := d.signInLines.wait(ctx, client)
	if err != nil {
		return nil, err
	}
	defer done()
	if knownDevice {
		// And one at a time per account: those go ahead of the others,
		// and one account can have many device cookies (its owner's
		// own sign-ins make them), so from many addresses it would
		// otherwise fill the way ahead with its own.
		done, err := d.deviceLines.wait(ctx, email)
		if err != nil {
			return nil, err
		}
		defer done()
	}
	return d.accounts.CheckPassword(ctx, email, password, knownDevice)
}

// tooLarge answers a sign-in over maxLoginBody.
func tooLarge(w http.ResponseWriter) {
	writeProblem(w, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "the sign-in is larger than 4 KiB")
}

// clientAddress is the request's remote IP without the port, as the audit
// log shows it (the address throttle counts by api.ClientKey).
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().String()
	}
	return host
}

// throttled is the catalogue key of the throttled sign-in message for a
// wait of secs seconds, in the singular for one.
func throttled(secs int) string {
	if secs == 1 {
		return "login.throttled.one"
	}
	return "login.throttled"
}

// retryAfter sets the Retry-After header to wait in whole seconds, rounded
// up, and returns them.
func retryAfter(w http.ResponseWriter, wait time.Duration) int {
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return secs
}
