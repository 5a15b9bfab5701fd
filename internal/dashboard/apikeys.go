package dashboard

import (
	"context"
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

// Keys manages a merchant's API keys.
type Keys interface {
	List(ctx context.Context, merchantID string) ([]APIKey, error)
	// Create returns the new key's record and the key itself, which
	// exists nowhere else.
	Create(ctx context.Context, merchantID string, now time.Time) (*APIKey, string, error)
	// Revoke fails with a not-found *payment.Error for another
	// merchant's key.
	Revoke(ctx context.Context, merchantID, keyID string, now time.Time) error
}

type keysPage struct {
	layout
	Keys []APIKey
}

// keyCreatedPage shows a new key, the one time it is ever shown.
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
		d.render(w, r, http.StatusOK, "keys", &keysPage{layout: layout{Title: "keys.title", Nav: "keys"}, Keys: keys})
	})
}

// handleKeyCreate makes a key and shows it in the answer to this POST,
// sent with Cache-Control: no-store (render sets it): reloading or going
// back never shows it again.
func (d *Dashboard) handleKeyCreate() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		k, key, err := d.keys.Create(r.Context(), s.MerchantID, d.now())
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.Audit(r.Context(), team.ActionKeyCreated, team.KeyTarget(k.Prefix, k.ID))
		d.render(w, r, http.StatusCreated, "key_created", &keyCreatedPage{layout: layout{Title: "keys.new.title", Nav: "keys"}, Key: key, Record: *k})
	})
}

// findKey returns the merchant's key named in the path, or nil.
func (d *Dashboard) findKey(r *http.Request) (*APIKey, error) {
	keys, err := d.keys.List(r.Context(), sessionOf(r).MerchantID)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.ID == r.PathValue("id") {
			return &k, nil
		}
	}
	return nil, nil
}

func (d *Dashboard) handleKeyRevokeConfirm() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := d.findKey(r)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if k == nil || k.RevokedAt != nil {
			d.notFound(w, r)
			return
		}
		d.render(w, r, http.StatusOK, "key_revoke", &keyRevokePage{layout: layout{Title: "keys.revoke.title", Nav: "keys"}, Key: *k})
	})
}

func (d *Dashboard) handleKeyRevoke() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := d.findKey(r)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if k == nil {
			d.notFound(w, r)
			return
		}
		if err := d.keys.Revoke(r.Context(), sessionOf(r).MerchantID, k.ID, d.now()); err != nil {
			d.fail(w, r, err)
			return
		}
		if k.RevokedAt == nil {
			d.Audit(r.Context(), team.ActionKeyRevoked, team.KeyTarget(k.Prefix, k.ID))
		}
		d.redirectWithFlash(w, r, "/keys", "keys.revoked.flash", "")
	})
}
