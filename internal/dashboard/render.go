package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

//go:embed templates
var templateFS embed.FS

// layout is what every page shows around its own content. Each page
// struct embeds it; render fills it in from the request's session.
type layout struct {
	Lang  string
	Title string // a catalogue key
	// TitleDetail follows the title in the window's title: which one of
	// many, such as a transaction's reference, so tabs and history tell
	// pages apart.
	TitleDetail string
	User        *team.User
	Merchant    string // the merchant's name
	Sandbox     bool
	Flash       string // a catalogue key
	FlashArg    string
	RequestID   string
	// Nav is the current section ("overview", "keys", ...), to mark the
	// menu.
	Nav string
	// Path is the page's own path and query (its filters), for the
	// language switch to return to.
	Path string
}

func (l *layout) base() *layout { return l }

// T translates a catalogue key into the page's language.
func (l *layout) T(key string, args ...any) string { return translate(l.Lang, key, args...) }

// Can reports whether the signed-in user's role grants a permission
// ("keys:write", ...); templates use it to hide what the user may not do,
// and the routes refuse it whatever the page shows.
func (l *layout) Can(p string) bool { return l.User != nil && l.User.Role.Can(team.Permission(p)) }

// Status is a transaction status's name in the page's language.
func (l *layout) Status(s payment.Status) string { return l.T("status." + string(s)) }

// RoleName is a role's name in the page's language.
func (l *layout) RoleName(r team.Role) string { return l.T("role." + string(r)) }

// page is any typed page struct: one that embeds layout.
type page interface{ base() *layout }

// renderer holds every page's template, parsed once at start: each page
// file is parsed on a copy of layout.html and defines "main".
type renderer struct {
	pages map[string]*template.Template
}

func newRenderer(a *assets) (*renderer, error) {
	funcs := template.FuncMap{
		"asset": a.url,
		"fcfa":  fcfa,
		"when":  when,
		"whenp": whenPtr,
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials/*.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	r := &renderer{pages: map[string]*template.Template{}}
	for _, p := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, p)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", p, err)
		}
		r.pages[name] = t
	}
	return r, nil
}

// render writes a page with status. It fills the layout from the request
// (language, user, flash, sandbox flag) before executing the template
// into a buffer, so a template error becomes the error page, not half a
// page. Every page is sent with Cache-Control: no-store: after sign-out
// the back button shows nothing.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	l := p.base()
	s := sessionOf(r)
	if s != nil {
		l.User = &s.User
		l.Merchant = s.MerchantName
	}
	l.Lang = pageLanguage(r)
	l.Sandbox = d.sandbox
	l.RequestID = w.Header().Get("X-Request-Id")
	l.Path = r.URL.Path
	switch {
	case r.Method == http.MethodGet && len(r.URL.RequestURI()) < 512: // localPath's bound
		l.Path = r.URL.RequestURI()
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		l.Path = formPage(r)
	}
	if l.Flash == "" {
		l.Flash, l.FlashArg = d.takeFlash(w, r)
	}
	t, ok := d.pages.pages[name]
	if !ok {
		d.fail(w, r, fmt.Errorf("no template %q", name))
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		d.fail(w, r, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// pageLanguage is the language of the page answering r: the signed-in
// user's choice first (language says what follows).
func pageLanguage(r *http.Request) string {
	saved := ""
	if s := sessionOf(r); s != nil {
		saved = s.User.Language
	}
	return language(r, saved)
}

// formPage is where the language switch of a page answering a form (a 422
// to a POST) returns: that address takes only POST, so it is the page the
// form was sent from (its same-site Referer), or the overview.
func formPage(r *http.Request) string {
	if u, err := url.Parse(r.Referer()); err == nil && u.Host == r.Host && localPath(u.RequestURI()) {
		return u.RequestURI()
	}
	return "/"
}

// messagePage is the page of the error, not-found and forbidden answers.
type messagePage struct {
	layout
	Heading string // catalogue keys
	Body    string
	Back    string // where its link leads; the overview when empty
}

// fail answers an error: a domain "not found" is the 404 page; a database
// out of reach (api.DatabaseOut: SQLite's write lock held elsewhere,
// PostgreSQL restarting, the request's budget spent waiting) is a 503
// page asking to try again shortly, logged as the API logs its 503s;
// anything else is logged with the request id and shown as that id only.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	if api.ClientGone(r, err) {
		// Nobody reads the answer and nothing failed on our side (a
		// sign-in closed while it waited its turn, say): not a 500 in
		// the logs and metrics, as in the API.
		d.log.Info("request abandoned by the client", "request_id", w.Header().Get("X-Request-Id"), "method", r.Method, "path", r.URL.Path)
		w.WriteHeader(api.StatusClientClosedRequest)
		return
	}
	if e, ok := errors.AsType[*payment.Error](err); ok && e.Code == payment.ENOTFOUND {
		d.notFound(w, r)
		return
	}
	if api.DatabaseOut(r, err) {
		api.NoteDatabaseOut(r, d.log, err)
		w.Header().Set("Retry-After", "2")
		if wantsJSON(r) {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{"code": "GATEWAY_UNAVAILABLE",
				"message": "the service is temporarily unavailable; retry after retry_after seconds", "status": http.StatusServiceUnavailable, "retry_after": 2}})
			return
		}
		d.errorPage(w, r, http.StatusServiceUnavailable, "unavailable.title", "unavailable.body")
		return
	}
	d.log.Error("internal error", "request_id", w.Header().Get("X-Request-Id"), "method", r.Method, "path", r.URL.Path, "err", err)
	if wantsJSON(r) {
		writeProblem(w, http.StatusInternalServerError, "INTERNAL_ERROR", "internal error, request id "+w.Header().Get("X-Request-Id"))
		return
	}
	d.errorPage(w, r, http.StatusInternalServerError, "error.title", "error.body")
}

// errorPage writes a message page without what render needs of the
// request (a session, the page's data), which may be what just failed.
func (d *Dashboard) errorPage(w http.ResponseWriter, r *http.Request, status int, title, body string) {
	p := &messagePage{layout: layout{Title: title}, Heading: title, Body: body}
	if name := "message"; d.pages.pages[name] != nil {
		var buf bytes.Buffer
		p.Lang = pageLanguage(r)
		p.RequestID = w.Header().Get("X-Request-Id")
		if d.pages.pages[name].ExecuteTemplate(&buf, "layout.html", p) == nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(status)
			w.Write(buf.Bytes())
			return
		}
	}
	http.Error(w, http.StatusText(status)+", request id "+w.Header().Get("X-Request-Id"), status)
}

// notFound is the 404 page, the answer for another merchant's ids too.
func (d *Dashboard) notFound(w http.ResponseWriter, r *http.Request) {
	if wantsJSON(r) {
		writeProblem(w, http.StatusNotFound, "NOT_FOUND", "not found (or another merchant's)")
		return
	}
	d.render(w, r, http.StatusNotFound, "message", &messagePage{layout: layout{Title: "notfound.title"}, Heading: "notfound.title", Body: "notfound.body"})
}

// methodNotAllowed is the 405 page for a path the dashboard has, asked
// with a method none of its routes takes; Allow names the ones they do.
func (d *Dashboard) methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		if wantsJSON(r) {
			writeProblem(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "this method is not allowed here; use "+allow)
			return
		}
		r = d.withSessionIfAny(w, r)
		d.render(w, r, http.StatusMethodNotAllowed, "message", &messagePage{layout: layout{Title: "badmethod.title"}, Heading: "badmethod.title", Body: "badmethod.body"})
	})
}

// NotFoundPage is the 404 page with the dashboard's headers, for the API's
// catch-all to show a browser that asked for a page that does not exist.
// A signed-in user gets it in the dashboard's frame, with the menu and in
// their language, so a mistyped address is not a dead end.
func (d *Dashboard) NotFoundPage() http.Handler {
	return d.secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.notFound(w, d.withSessionIfAny(w, r))
	}))
}

// withSessionIfAny gives a page outside the signed-in routes (404, 405)
// the request's session when it has one, for the menu and the user's
// language; without one the page is shown as to anybody.
func (d *Dashboard) withSessionIfAny(w http.ResponseWriter, r *http.Request) *http.Request {
	if s, err := d.current(w, r); err == nil && s != nil {
		return r.WithContext(context.WithValue(r.Context(), ctxSession, s))
	}
	return r
}

// crossOrigin refuses an unsafe request from another site (CSRF) with
// 403. A form gets a page in the visitor's language, which says what to
// do: the one honest way to meet it is a proxy that changes the Host the
// browser named. Anything else (the JSON sign-in, a tool) gets the
// contract's envelope. No session is loaded: the request is not trusted.
func (d *Dashboard) crossOrigin(w http.ResponseWriter, r *http.Request) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if wantsJSON(r) || mt != "application/x-www-form-urlencoded" && mt != "multipart/form-data" {
		writeProblem(w, http.StatusForbidden, "FORBIDDEN", "cross-origin request refused")
		return
	}
	d.render(w, r, http.StatusForbidden, "message", &messagePage{layout: layout{Title: "crossorigin.title"}, Heading: "crossorigin.title", Body: "crossorigin.body"})
}

// forbidden is the 403 page for an action the user's role does not grant.
func (d *Dashboard) forbidden(w http.ResponseWriter, r *http.Request) {
	if wantsJSON(r) {
		writeProblem(w, http.StatusForbidden, "FORBIDDEN", "your role does not allow this")
		return
	}
	d.render(w, r, http.StatusForbidden, "message", &messagePage{layout: layout{Title: "forbidden.title"}, Heading: "forbidden.title", Body: "forbidden.body"})
}
