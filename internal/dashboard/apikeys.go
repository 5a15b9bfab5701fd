package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"time"

	"github.com/momopay/momopay/internal/team"
)

// APIKey is a key's record as the dashboard lists it: never the key.
type APIKey struct {
	ID         string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// ErrTooManyKeys is Keys.Create's refusal of a key past the most active
// keys a merchant may have.
var ErrTooManyKeys = errors.New("too many active API keys")

// Keys manages a merchant's API keys.
type Keys interface {
	List(ctx context.Context, merchantID string) ([]APIKey, error)
	// Create returns the new key's record and the key itself, which
	// exists nowhere else. request names this create (the form's token):
	// a second Create with the same one makes no key, and returns the
	// first's record with the key "". A merchant with the most active
	// keys allowed gets ErrTooManyKeys.
	Create(ctx context.Context, merchantID, request string, now time.Time) (*APIKey, string, error)
	// Revoke fails with a not-found *payment.Error for another
	// merchant's key. It reports whether this call revoked the key (not
	// another, at once or before).
	Revoke(ctx context.Context, merchantID, keyID string, now time.Time) (bool, error)
}

type keysPage struct {
	layout
	Keys []APIKey
	// Request is the create form's token, new on each showing of the
	// page: the form sent twice (a reload of the new key's page) makes
	// one key.
	Request string
}

// keyCreatedPage shows a new key, the one time it is ever shown; or,
// with no Key, says that this form already made Record.
type keyCreatedPage struct {
	layout
	Key    string
	Record APIKey
}

type keyRevokePage struct {
	layout
	Key APIKey
}

func (d *Dashboard) handleKeys() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys, err := d.keys.List(r.Context(), sessionOf(r).MerchantID)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.render(w, r, http.StatusOK, "keys", &keysPage{layout: layout{Title: "keys.title", Nav: "keys"}, Keys: keys, Request: rand.Text()})
	})
}

// handleKeyCreate makes a key and shows it in the answer to this POST,
// sent with Cache-Control: no-store (render sets it): going back never
// shows it again. Reloading that answer sends the form again, with the
// same token: no second key is made, and the page says so (409). A form
// without a token (a page kept from before tokens) makes a key each time.
func (d *Dashboard) handleKeyCreate() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			d.badForm(w, r, err)
			return
		}
		s := sessionOf(r)
		k, key, err := d.keys.Create(r.Context(), s.MerchantID, formTokenOf(r), d.now())
		if errors.Is(err, ErrTooManyKeys) {
			d.redirectWithFlash(w, r, "/keys", "keys.toomany", "")
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		page := &keyCreatedPage{layout: layout{Title: "keys.new.title", Nav: "keys"}, Key: key, Record: *k}
		if key == "" {
			page.Title = "keys.again.title"
			d.render(w, r, http.StatusConflict, "key_created", page)
			return
		}
		d.Audit(r.Context(), team.ActionKeyCreated, team.KeyTarget(k.Prefix, k.ID))
		d.render(w, r, http.StatusCreated, "key_created", page)
	})
}

// pathKey returns the session's merchant's key named in the path. When
// there is none (another merchant's is none) or the keys cannot be read,
// it has answered (404, or the error) and returns nil.
func (d *Dashboard) pathKey(w http.ResponseWriter, r *http.Request) *APIKey {
	keys, err := d.keys.List(r.Context(), sessionOf(r).MerchantID)
	if err != nil {
		d.fail(w, r, err)
		return nil
	}
	for _, k := range keys {
		if k.ID == r.PathValue("id") {
			return &k
		}
	}
	d.notFound(w, r)
	return nil
}

// handleKeyRevokeConfirm asks before revoking a key. A key of the
// merchant's revoked already (the back button after revoking it) gets a
// page saying so; another merchant's is not found.
func (d *Dashboard) handleKeyRevokeConfirm() http.Handler {
	return http.HandlerFunc(d.keyRevokePage)
}

// keyRevokePage answers the revoke page of the key named in the path, as
// it is now: the confirmation, or, for a key revoked already (the back
// button, a second click, another person's revoke that won the race), a
// page saying so and since when; another merchant's key is not found.
func (d *Dashboard) keyRevokePage(w http.ResponseWriter, r *http.Request) {
	k := d.pathKey(w, r)
	if k == nil {
		return
	}
	title := "keys.revoke.title"
	if k.RevokedAt != nil {
		title = "keys.already.title"
	}
	d.render(w, r, http.StatusOK, "key_revoke", &keyRevokePage{layout: layout{Title: title, Nav: "keys"}, Key: *k})
}

func (d *Dashboard) handleKeyRevoke() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := d.pathKey(w, r)
		if k == nil {
			return
		}
		revoked, err := d.keys.Revoke(r.Context(), sessionOf(r).MerchantID, k.ID, d.now())
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if !revoked {
			// Revoked already: a second click, or another person's revoke
			// that won the race. It is not this request's doing, so the
			// page says so rather than "The key was revoked."
			d.keyRevokePage(w, r)
			return
		}
		d.Audit(r.Context(), team.ActionKeyRevoked, team.KeyTarget(k.Prefix, k.ID))
		d.redirectWithFlash(w, r, "/keys", "keys.revoked.flash", "")
	})
}
