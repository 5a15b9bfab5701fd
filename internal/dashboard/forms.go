package dashboard

import (
	"errors"
	"mime"
	"net/http"
	"regexp"
)

// The helpers every dashboard form handler shares.

// maxForm bounds a dashboard form's body.
const maxForm = 64 << 10

// errFormType is a body that is not a form: JSON, text, or bytes with no
// type. Read as a form, it would be an empty one, and the page would
// answer as if every field were missing.
var errFormType = errors.New("not a form")

// parseForm reads a form body of at most maxForm bytes, urlencoded (as
// the dashboard's pages send it) or multipart (as curl -F does); what it
// cannot read, badForm answers.
func parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mt == "multipart/form-data":
		return r.ParseMultipartForm(maxForm)
	case mt == "application/x-www-form-urlencoded", mt == "" && r.ContentLength == 0:
		return r.ParseForm()
	}
	return errFormType
}

// formStatus is the status of a form parseForm could not read: too large
// (413), not a form (415), or malformed (400).
func formStatus(err error) int {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return http.StatusRequestEntityTooLarge
	}
	if errors.Is(err, errFormType) {
		return http.StatusUnsupportedMediaType
	}
	return http.StatusBadRequest
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

// badForm answers a form that could not be read (err from parseForm), or
// with a nil err one whose fields make no sense.
func (d *Dashboard) badForm(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusBadRequest
	if err != nil {
		status = formStatus(err)
	}
	if wantsJSON(r) {
		switch status {
		case http.StatusRequestEntityTooLarge:
			writeProblem(w, status, "PAYLOAD_TOO_LARGE", "the form is larger than 64 KiB")
		case http.StatusUnsupportedMediaType:
			writeProblem(w, status, "UNSUPPORTED_MEDIA_TYPE", "send the fields as application/x-www-form-urlencoded or multipart/form-data")
		default:
			writeInvalid(w, "the form could not be read", "form", "send application/x-www-form-urlencoded fields within the size bound")
		}
		return
	}
	d.render(w, r, status, "message", &messagePage{layout: layout{Title: "error.title"}, Heading: "error.title", Body: "form.unreadable"})
}
