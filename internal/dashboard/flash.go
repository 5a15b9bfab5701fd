package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
)

// flashCookie carries a catalogue key (and one argument) across the 303
// that follows a successful form; never a secret. It is signed: the
// argument is text the page shows, and a cookie planted by a sibling
// subdomain or on the network must not put its own words ("your account
// is suspended, call …") into a trusted page.
const flashCookie = "momopay_flash"

func (d *Dashboard) redirectWithFlash(w http.ResponseWriter, r *http.Request, to, key, arg string) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: d.encodeFlash(key, arg), Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// flashKey signs flash cookies: derived from the session secret, so that
// no other token of the dashboard passes for one.
func (d *Dashboard) flashKey() []byte {
	mac := hmac.New(sha256.New, d.secret)
	mac.Write([]byte("momopay flash cookie"))
	return mac.Sum(nil)
}

func (d *Dashboard) flashMAC(value string) []byte {
	mac := hmac.New(sha256.New, d.flashKey())
	mac.Write([]byte(value))
	return mac.Sum(nil)
}

// encodeFlash is base64(key) "." base64(arg) "." base64(HMAC of the two).
func (d *Dashboard) encodeFlash(key, arg string) string {
	v := base64.RawURLEncoding.EncodeToString([]byte(key)) + "." + base64.RawURLEncoding.EncodeToString([]byte(arg))
	return v + "." + base64.RawURLEncoding.EncodeToString(d.flashMAC(v))
}

// takeFlash reads and clears the flash cookie when r loads a page; one
// not signed by this service, or naming no message of the catalogue,
// shows nothing.
func (d *Dashboard) takeFlash(w http.ResponseWriter, r *http.Request) (key, arg string) {
	c, err := r.Cookie(flashCookie)
	if err != nil || !navigation(r) {
		return "", ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return "", ""
	}
	sig, err := base64.RawURLEncoding.DecodeString(c.Value[i+1:])
	if err != nil || !hmac.Equal(sig, d.flashMAC(c.Value[:i])) {
		return "", ""
	}
	k, a, _ := strings.Cut(c.Value[:i], ".")
	kb, err1 := base64.RawURLEncoding.DecodeString(k)
	ab, err2 := base64.RawURLEncoding.DecodeString(a)
	if _, ok := messages[english][string(kb)]; !ok || err1 != nil || err2 != nil {
		return "", ""
	}
	return string(kb), string(ab)
}

// navigation reports whether r loads a page in a browser's window, which
// is where a flash is shown, rather than a script's background read (a
// pending payment's page reads itself again every few seconds: taking the
// flash there would drop one set by another tab before that tab showed
// it). Browsers send Sec-Fetch-Dest ("document" for a page, "empty" for
// fetch); a request without it (an older browser, a script) is taken to
// be a page, as before.
func navigation(r *http.Request) bool {
	dest := r.Header.Get("Sec-Fetch-Dest")
	return dest == "" || dest == "document"
}
