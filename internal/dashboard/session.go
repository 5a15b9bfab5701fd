package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/team"
)

// Accounts is what signing in and the account page need of the users.
type Accounts interface {
	// CheckPassword returns the user whose email and password match, or
	// nil (no error) for an unknown email or a wrong password alike.
	// knownDevice: a sign-in from a browser with the account's device
	// cookie, whose check goes ahead of others while they queue.
	CheckPassword(ctx context.Context, email, password string, knownDevice bool) (*team.User, error)
	ByEmail(ctx context.Context, email string) (*team.User, error)
	// SetPassword applies only while current (the Credential of the check
	// of the current password) is still the user's password.
	SetPassword(ctx context.Context, merchantID, userID, current, password string, now time.Time) (string, error)
	SetLanguage(ctx context.Context, merchantID, userID, lang string) error
}

// Sessions keeps the sessions' rows, which every request checks.
type Sessions interface {
	// Start records a session of a user checked as credential
	// (team.User.Credential), or gives team.ErrNotFound when that is no
	// longer the user's password or the user is gone.
	Start(ctx context.Context, s team.Session, credential string) error
	// Active returns the session and its user as they are now, or
	// team.ErrNotFound when it is unknown, ended, or idle since before
	// idleSince.
	Active(ctx context.Context, jti string, now, idleSince time.Time) (*team.Session, *team.User, error)
	Touch(ctx context.Context, jti string, now time.Time) error
	End(ctx context.Context, jti string, now time.Time) error
	// Prune deletes the rows of sessions that ended before cutoff.
	Prune(ctx context.Context, cutoff time.Time) (int64, error)
}

// Session lifetimes: a session ends after IdleTimeout without a request,
// and AbsoluteLifetime after sign-in whatever happens. The token is
// re-issued (and the row's last_seen_at moved) at most once per
// renewEvery, so a busy page costs one write a minute.
const (
	IdleTimeout      = 30 * time.Minute
	AbsoluteLifetime = 12 * time.Hour
	renewEvery       = time.Minute
	// touchWait bounds a renewal's write: past it the page is shown
	// without one, rather than wait out a database that cannot write.
	touchWait = 2 * time.Second
)

// SessionCookie is the cookie that carries the session token. Its
// __Host- prefix makes browsers refuse it unless it is Secure, for the
// whole site (Path=/) and of this host alone (no Domain): a sibling
// subdomain or a plain-http answer on the network cannot plant one that
// the server would read first, which would sign the victim in to the
// planter's account or keep signing them out.
const SessionCookie = "__Host-momopay_session"

// MinSecretBytes is the shortest signing secret accepted.
const MinSecretBytes = 32

// claims is the session token's payload (contract §5: merchant id, role,
// permissions; plus the user, iat, exp and jti).
type claims struct {
	MerchantID  string            `json:"merchant_id"`
	UserID      string            `json:"user_id"`
	Role        team.Role         `json:"role"`
	Permissions []team.Permission `json:"permissions"`
	jwt.RegisteredClaims
}

// session is the signed-in request's identity, from the token checked
// against its row. Handlers read it with sessionOf; the merchant id of
// every query comes from here, never from a form or a URL.
type session struct {
	JTI          string
	MerchantID   string
	MerchantName string
	User         team.User
	// Address is the client's address, for the audit log.
	Address string
}

type ctxKey int

const ctxSession ctxKey = iota

// sessionOf returns the request's session; nil outside signedIn.
func sessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(ctxSession).(*session)
	return s
}

// issue signs a token for the session and sets it as the cookie. It
// expires IdleTimeout from now, or at the session's absolute end.
func (d *Dashboard) issue(w http.ResponseWriter, s *team.Session, u *team.User, now time.Time) error {
	exp := now.Add(IdleTimeout)
	if s.ExpiresAt.Before(exp) {
		exp = s.ExpiresAt
	}
	c := claims{
		MerchantID: s.MerchantID, UserID: u.ID, Role: u.Role, Permissions: u.Role.Permissions(),
		RegisteredClaims: jwt.RegisteredClaims{
			ID: s.JTI, Subject: u.ID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(d.secret)
	if err != nil {
		return err
	}
	setSessionCookie(w, &http.Cookie{
		Name: SessionCookie, Value: token, Path: "/",
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
	})
	return nil
}

func clearSessionCookie(w http.ResponseWriter) {
	setSessionCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
}

// setSessionCookie sets c as the answer's one session cookie: a handler
// that starts or ends a session (a new password, signing out) replaces the
// renewal the request's own session got on its way in, rather than send
// two cookies of one name and rely on the browser keeping the last.
func setSessionCookie(w http.ResponseWriter, c *http.Cookie) {
	h := w.Header()
	kept := h["Set-Cookie"][:0]
	for _, v := range h["Set-Cookie"] {
		if !strings.HasPrefix(v, SessionCookie+"=") {
			kept = append(kept, v)
		}
	}
	h["Set-Cookie"] = kept
	http.SetCookie(w, c)
}

// parse checks a token's signature, algorithm and expiry.
func (d *Dashboard) parse(token string) (*claims, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return d.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), jwt.WithTimeFunc(d.now))
	if err != nil {
		return nil, err
	}
	if c.ID == "" || c.MerchantID == "" || c.UserID == "" {
		return nil, errors.New("session token lacks its ids")
	}
	return &c, nil
}

// current returns the request's live session, renewing its cookie when
// due, or nil when there is none (no cookie, a bad token, an ended row).
func (d *Dashboard) current(w http.ResponseWriter, r *http.Request) (*session, error) {
	cookie, err := r.Cookie(SessionCookie)
	if err != nil || cookie.Value == "" || len(cookie.Value) > 4096 {
		return nil, nil
	}
	c, err := d.parse(cookie.Value)
	if err != nil {
		return nil, nil
	}
	now := d.now()
	row, u, err := d.sessions.Active(r.Context(), c.ID, now, now.Add(-IdleTimeout))
	if errors.Is(err, team.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if row.MerchantID != c.MerchantID || u.ID != c.UserID {
		return nil, nil
	}
	// Renew while in use; at once when the role changed, so the token's
	// claims say what the server enforces (from the row, not the token).
	if now.Sub(c.IssuedAt.Time) >= renewEvery || c.Role != u.Role {
		touch, cancel := context.WithTimeout(r.Context(), touchWait)
		err := d.sessions.Touch(touch, row.JTI, now)
		cancel()
		switch {
		case err != nil && c.Role == u.Role && (api.DatabaseOut(r, err) || r.Context().Err() == nil && touch.Err() != nil):
			// Bookkeeping, not a condition of the page: a database that
			// cannot take the write just now (SQLite's write lock held
			// elsewhere; reads get past it) leaves the session as it was,
			// and the next request renews it. A changed role must reach
			// the token first.
		case err != nil:
			return nil, err
		default:
			if err := d.issue(w, row, u, now); err != nil {
				return nil, err
			}
		}
	}
	return &session{JTI: row.JTI, MerchantID: row.MerchantID, MerchantName: row.MerchantName, User: *u,
		Address: clientAddress(r)}, nil
}

// signedIn admits requests with a live session and gives handlers its
// identity. Without one, a browser is sent to the sign-in page; a request
// carrying an API key instead is refused with 401 (keys are for /v1 only,
// contract §5 rule 4), and so is a JSON caller, in the envelope.
func (d *Dashboard) signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := d.current(w, r)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if s == nil {
			c, err := r.Cookie(SessionCookie)
			ended := err == nil && c.Value != ""
			if err == nil {
				clearSessionCookie(w)
			}
			if r.Header.Get("Authorization") != "" {
				writeProblem(w, http.StatusUnauthorized, "UNAUTHORIZED", "the dashboard takes a session cookie from POST /auth/login, not an API key")
				return
			}
			if wantsJSON(r) {
				writeProblem(w, http.StatusUnauthorized, "UNAUTHORIZED", "no session: sign in with POST /auth/login and send the session cookie it sets")
				return
			}
			// A cookie that no longer opens a session (expired, signed
			// out elsewhere, ended by a new password) is a session that
			// ended: the sign-in page says so, rather than appear from
			// nowhere. A first visit, without one, gets no message.
			if ended {
				d.redirectWithFlash(w, r, loginFor(r), "login.expired", "")
				return
			}
			http.Redirect(w, r, loginFor(r), http.StatusSeeOther)
			return
		}
		if d.noteMerchant != nil {
			d.noteMerchant(r.Context(), s.MerchantID)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxSession, s)))
	})
}

// need admits only users whose role grants p; it runs inside signedIn.
func (d *Dashboard) need(p team.Permission, next http.Handler) http.Handler {
	return d.signedIn(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sessionOf(r).User.Role.Can(p) {
			d.forbidden(w, r)
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// handleLogout ends the session on every instance at once and clears the
// cookie. A JSON caller gets 200, a form 303 to the sign-in page.
func (d *Dashboard) handleLogout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := d.current(w, r)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if s != nil {
			if d.noteMerchant != nil {
				d.noteMerchant(r.Context(), s.MerchantID) // for the request's log line, as signedIn does
			}
			if err := d.sessions.End(r.Context(), s.JTI, d.now()); err != nil {
				d.fail(w, r, err)
				return
			}
			d.audit(r.Context(), team.AuditEntry{MerchantID: s.MerchantID, UserID: s.User.ID, Email: s.User.Email,
				Action: team.ActionSignOut, Target: s.User.Email, Address: s.Address, At: d.now()})
		}
		clearSessionCookie(w)
		if wantsJSON(r) {
			writeJSON(w, http.StatusOK, map[string]string{"status": "signed_out"})
			return
		}
		d.redirectWithFlash(w, r, "/login", "login.signedout", "")
	})
}
