package browsertest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The harness's own checks must be able to fail: a page with known faults
// makes axe-core and the width check report them, and a clean page passes
// both. Without this, a broken injection (or a CSP that stopped axe) would
// pass every dashboard page silently.

const faultyPage = `<!doctype html><html><head><title>faulty</title></head><body>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<button></button>
<p style="color:#ccc;background:#fff">pale text</p>
<div style="width:600px">a row too wide for a phone</div>
<div class="table-wrap" style="overflow-x:auto;width:200px"><p style="white-space:nowrap">a row of text that no keyboard can scroll to see the end of</p></div>
<script>console.log("inline script ran")</script>
</body></html>`

const cleanPage = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>clean</title></head>
<body><main><h1>Clean</h1><form><label for="e">Email</label><input id="e" name="e" type="email">
<button type="submit">Sign in</button></form>
<div style="overflow-x:auto"><table><tr><th>a wide table that scrolls inside its own box</th><td style="min-width:900px">x</td></tr></table></div>
</main></body></html>`

// escapingPage fits a phone but for a visually hidden label in a wide
// table: absolute, it escapes its unpositioned scrolling box and widens the
// page.
const escapingPage = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>escape</title></head>
<body><main><h1>Escape</h1><div style="overflow-x:auto"><table><tr><td style="min-width:600px">wide</td>
<td><span id="hidden-label" style="position:absolute;width:1px;height:1px;overflow:hidden">Actions</span></td></tr></table></div>
</main></body></html>`

func TestHarnessReportsFaults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The dashboard's CSP forbids inline script; axe must still run.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src data:")
		if r.URL.Path == "/escape" {
			w.Write([]byte(escapingPage))
			return
		}
		if r.URL.Path == "/clean" {
			w.Write([]byte(cleanPage))
			return
		}
		w.Write([]byte(faultyPage))
	}))
	defer srv.Close()
	b := newBrowser(t, srv.URL, "harness")

	b.open("/faulty")
	var ids []string
	for _, v := range b.axeViolations() {
		ids = append(ids, v.ID)
	}
	for _, want := range []string{"image-alt", "button-name", "html-has-lang", "color-contrast", "scrollable-region-focusable"} {
		if !slices.Contains(ids, want) {
			t.Errorf("axe-core on the faulty page reported %v; want %s among them", ids, want)
		}
	}
	r := b.onPhone(nil)
	if r.problem() == "" {
		t.Errorf("the faulty page (no viewport meta, a 600 px row) passed the width check: %+v", r)
	}
	if bad := run(b, "look at the table wrappers", chromedp.Evaluate[[]string](tableRegions)); len(bad) != 1 || !strings.Contains(bad[0], "tabindex") {
		t.Errorf("the table wrapper check on the faulty page says %q; want its one unfocusable wrapper", bad)
	}
	if msg := formatViolations(b.axeViolations()); !strings.Contains(msg, "image-alt") || !strings.Contains(msg, "<img") {
		t.Errorf("the violation report does not name the rule and the element:\n%s", msg)
	}
	// The inline script broke the page's CSP: the browser says so.
	var said []string
	for range 20 {
		if said = append(said, b.console.take()...); strings.Contains(strings.Join(said, " "), "Content Security Policy") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(strings.Join(said, " "), "Content Security Policy") {
		t.Errorf("the console collector missed the CSP refusal of an inline script; it has %q", said)
	}

	b.open("/clean")
	if vs := b.axeViolations(); len(vs) > 0 {
		t.Errorf("axe-core on the clean page: %s", formatViolations(vs))
	}
	if r := b.onPhone(nil); r.problem() != "" {
		t.Errorf("the clean page at %d px: %s", phoneWidth, r.problem())
	}

	b.open("/escape")
	if r := b.onPhone(nil); !strings.Contains(r.problem(), "span#hidden-label") {
		t.Errorf("the width check on a page widened by an escaping hidden label says %q; want it to name span#hidden-label", r.problem())
	}
}
