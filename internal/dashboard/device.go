package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Device cookies keep a guesser from locking a user out. Failed sign-ins
// are counted per account so that passwords cannot be guessed from many
// addresses; but then anyone who knows an email could keep that account
// refused by failing on purpose. A browser that signed in to an account
// before carries a device cookie for it, and its attempts are counted
// against that device instead of the account: the user's own browser
// still signs in while the account is throttled for everyone else, and a
// stolen device cookie buys a guesser no more tries than the account has.
// (OWASP's "slow down online guessing attacks with device cookies".)
const (
	deviceCookie   = "momopay_device"
	deviceLifetime = 365 * 24 * time.Hour
)

// deviceClaims name the account a device cookie was issued for, by the
// SHA-256 of its email (the cookie carries no email), and the device (ID).
type deviceClaims struct {
	Account string `json:"acc"`
	jwt.RegisteredClaims
}

// deviceKey signs device cookies: derived from the session secret, so
// that neither kind of token passes for the other.
func (d *Dashboard) deviceKey() []byte {
	mac := hmac.New(sha256.New, d.secret)
	mac.Write([]byte("momopay device cookie"))
	return mac.Sum(nil)
}

func accountDigest(email string) string {
	sum := sha256.Sum256([]byte(email))
	return hex.EncodeToString(sum[:])
}

// trustedDevice is the id of r's device cookie when one is valid and was
// issued for email, or "". Every device cookie sent is tried (up to
// maxDeviceCookies), not only the first: the cookie cannot have the
// __Host- prefix (it is scoped to /auth/login), so a sibling subdomain
// could plant one of the same name that the browser sends first, and the
// user's own would be passed over while the account is throttled.
func (d *Dashboard) trustedDevice(r *http.Request, email string) string {
	for i, c := range r.CookiesNamed(deviceCookie) {
		if i == maxDeviceCookies {
			break
		}
		if id := d.deviceID(c.Value, email); id != "" {
			return id
		}
	}
	return ""
}

// maxDeviceCookies bounds the device cookies one sign-in verifies.
const maxDeviceCookies = 4

// deviceID is the device a device cookie's value names, when it is valid
// and was issued for email, or "".
func (d *Dashboard) deviceID(value, email string) string {
	var claims deviceClaims
	_, err := jwt.ParseWithClaims(value, &claims, func(*jwt.Token) (any, error) { return d.deviceKey(), nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(), jwt.WithTimeFunc(d.now))
	if err != nil || claims.ID == "" || !hmac.Equal([]byte(claims.Account), []byte(accountDigest(email))) {
		return ""
	}
	return claims.ID
}

// trustDevice gives the browser a device cookie for email (device id, or a
// new one when ""), valid deviceLifetime from now.
func (d *Dashboard) trustDevice(w http.ResponseWriter, email, id string, now time.Time) error {
	if id == "" {
		id = rand.Text()
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, deviceClaims{Account: accountDigest(email),
		RegisteredClaims: jwt.RegisteredClaims{ID: id, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(deviceLifetime))},
	}).SignedString(d.deviceKey())
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: deviceCookie, Value: token, Path: "/auth/login", MaxAge: int(deviceLifetime / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	return nil
}

// attemptsKey is what a sign-in's failures count against: its device,
// when the browser has signed in to this account before, else the
// account.
func attemptsKey(email, device string) string {
	if device != "" {
		return "device " + device
	}
	return email
}
