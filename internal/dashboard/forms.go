package dashboard

import (
	"net/http"
	"regexp"
)

// The helpers every dashboard form handler shares.

// maxForm bounds a dashboard form's body.
const maxForm = 64 << 10

// parseForm reads a bounded form body; false when it cannot.
func parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	return r.ParseForm() == nil
}

// formToken is the shape of a token from crypto/rand.Text.
var formToken = regexp.MustCompile(`^[A-Z2-7]{26}$`)

// formTokenOf is the token of the form r sent (its "request" field), or
// "" if it has none of the right shape; parseForm must have read the form.
// The forms that make a key or a secret carry one, new each time their
// page is shown, so that the same form sent again (a reload of the
// answer) changes nothing.
func formTokenOf(r *http.Request) string {
	if t := r.PostForm.Get("request"); formToken.MatchString(t) {
		return t
	}
	return ""
}

// badForm answers a form that could not be read.
func (d *Dashboard) badForm(w http.ResponseWriter, r *http.Request) {
	if wantsJSON(r) {
		writeInvalid(w, "the form could not be read", "form", "send application/x-www-form-urlencoded fields within the size bound")
		return
	}
	d.render(w, r, http.StatusBadRequest, "message", &messagePage{layout: layout{Title: "error.title"}, Heading: "error.title", Body: "form.unreadable"})
}
