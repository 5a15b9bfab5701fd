// Package dashboard is the merchants' web interface: sign-in with a
// session cookie (contract §4.4, §5) and server-rendered pages in French
// and English, mounted by internal/app on the service's one mux.
//
// It must not import internal/store: each file declares the narrow
// interface it needs where it uses it (Keys in apikeys.go, Team in
// team.go, Figures in overview.go, ...), and internal/app implements or
// adapts them (internal/app/dashboard.go). The merchant id of every query
// comes from the session (sessionOf(r).MerchantID), never from a form or
// a URL; another merchant's id answers 404 (d.notFound, or d.fail with a
// not-found *payment.Error).
//
// # Files
//
//   - routes.go: Config, New, Register (every route on one screen, each
//     with the permission it needs), the security headers and CSRF
//     refusal (secure), and Audit.
//   - session.go: the JWT cookie and its renewal, signedIn, need and
//     sign-out; login.go: the sign-in page, sign-in (form or JSON) and
//     its throttles; envelope.go: answers to JSON callers in the
//     contract's error envelope.
//   - render.go: templates parsed once, the layout every page embeds,
//     render, fail, notFound, forbidden, flash messages.
//   - i18n.go: language choice and the English and French catalogue.
//   - format.go: amounts ("1 500 FCFA") and times (N'Djamena, UTC on
//     hover).
//   - static.go: embedded static files under content-hashed URLs.
//   - one file per resource: overview.go, apikeys.go, team.go, audit.go,
//     account.go.
//
// # Adding a page
//
//  1. Template: templates/NAME.html defines "main" only; the layout
//     (templates/layout.html, with partials/) draws the header, the menu,
//     the flash and the sandbox note. Use {{.T "key"}} for every word,
//     {{fcfa .Amount}} for money, {{when .CreatedAt}} for times,
//     {{template "status" .Status}} for a status, and
//     {{if .Can "keys:write"}} to hide what the role may not do (the
//     route refuses it anyway). No inline script or style (the CSP
//     forbids both); forms post to the same origin and work without
//     JavaScript. static/app.js offers data-copy buttons and
//     data-refresh-seconds auto-reload.
//
//  2. Page struct in the resource's file, embedding layout:
//
//     type webhooksPage struct {
//     layout
//     Endpoints []Endpoint
//     }
//
//     and the handler renders it:
//
//     d.render(w, r, http.StatusOK, "webhooks", &webhooksPage{layout: layout{Title: "webhooks.title", Nav: "webhooks"}, ...})
//
//     Title is a catalogue key; Nav marks the menu entry. Add the page
//     to the list in render_test.go, which renders every page from its
//     zero value.
//
//  3. Route: one line in Register, wrapped in d.need(permission, ...)
//     (or d.signedIn for pages every role may use). Handlers are maker
//     methods, handleX() http.Handler. Unsafe methods need nothing more
//     for CSRF: secure refuses cross-origin ones.
//
//  4. Translations: in the resource's file, an init that calls
//     addMessages(map[string]string{...English...},
//     map[string]string{...French...}) with the same keys; the catalogue
//     test checks both languages have every key the templates use.
//
//  5. Narrow interface: declare what the page needs beside it (returning
//     domain types, or small structs declared here), add a field to
//     Config and Dashboard, and set it in New.
//
//  6. Wiring: in internal/app/dashboard.go, pass the store or service
//     (or a small adapter converting store types) in dashboard.Config.
//
// Forms: on a validation error re-render the page with each field's
// message as a catalogue key, shown under its field (aria-invalid, and
// aria-describedby naming its help and its error), and the count of them
// above the form (layout.FixFields). problems.go turns the domain's
// refusals, worded in English for the API, into keys (userProblems,
// urlProblem, noteProblem, resendProblem), by field, bound or the
// refusal's Reason (a sentinel error the domain exports, tested with
// errors.Is); the domain's English never reaches a page. On success
// d.redirectWithFlash(w, r, "/path", "catalogue.key", "") answers 303.
// A secret (an API key, a webhook secret) appears only in the response to
// the POST that made it (render always sends Cache-Control: no-store),
// never in a URL, a flash or a log. Record what a user changed with
// d.Audit(r.Context(), "endpoint.created", target).
package dashboard
