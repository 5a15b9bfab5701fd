package browsertest

import (
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"
)

// phoneWidth is the narrowest screen the dashboard must serve without
// scrolling sideways (the 360 px).
const phoneWidth = 360

// sidebarWidth is the narrowest screen with the side menu (app.css's 860
// px breakpoint): its 220 px leave the least room for the page's tables,
// which must scroll in their wrappers rather than widen the page.
const sidebarWidth = 860

// widthReport is what measureWidth finds on a page.
type widthReport struct {
	// Meta says the page has <meta name="viewport"
	// content="width=device-width ...">; without it a phone lays the page
	// out 980 px wide and shows it shrunk.
	Meta bool `json:"meta"`
	// Client and Scroll are the document's visible and total widths.
	Client int `json:"client"`
	Scroll int `json:"scroll"`
	// Offenders are the outermost elements sticking out on the right, outside
	// any container that scrolls by itself.
	Offenders []string `json:"offenders"`
}

// measureWidth measures the page in a viewport of the width given.
const measureWidth = `(w => {
  const de = document.documentElement;
  // An element is clipped by an ancestor that scrolls or hides on its own,
  // unless it is positioned against a box outside that ancestor (an
  // absolute element escapes an unpositioned scroller).
  const clips = cs => ['auto', 'scroll', 'hidden', 'clip'].includes(cs.overflowX);
  const scrollsItself = el => {
    const pos = getComputedStyle(el).position;
    if (pos === 'fixed') return false;
    let escapes = pos === 'absolute';
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const cs = getComputedStyle(p);
      if (clips(cs) && (!escapes || cs.position !== 'static')) return true;
      if (cs.position !== 'static') escapes = false;
    }
    return false;
  };
  const name = el => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    if (typeof el.className === 'string' && el.className.trim()) s += '.' + el.className.trim().split(/\s+/).join('.');
    return s;
  };
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= w + 1 || scrollsItself(el)) continue;
    if (el.parentElement && out.some(o => o.el.contains(el))) continue;
    out.push({el, d: name(el) + ' (right edge at ' + Math.round(r.right) + ' px)'});
    if (out.length === 8) break;
  }
  const meta = document.querySelector('meta[name=viewport]');
  return {meta: !!meta && /width=device-width/.test(meta.content), client: w, scroll: de.scrollWidth, offenders: out.map(o => o.d)};
})`

// checkNarrow shows the current page on a 360 px wide phone screen, saves its
// screenshot as <name>-360.png, fails the test if the page scrolls sideways,
// if a table hides columns off to the side (in a wrapper that scrolls), or
// if axe-core or checkTableRegions find a fault at that width, and puts
// the desktop viewport back. It does not reload the page, so it is safe on
// a page that answered a form.
func (b *Browser) checkNarrow(name string) {
	b.t.Helper()
	if b.pagesOnly {
		return
	}
	var vs []violation
	var hidden []string
	r := b.onPhone(func() {
		b.screenshot(name + "-360")
		vs = b.axeViolations()
		hidden = run(b, "look for tables scrolling sideways", chromedp.Evaluate[[]string](hiddenColumns))
		b.checkTableRegions(name + "-360")
	})
	if msg := r.problem(); msg != "" {
		b.t.Errorf("page %q (%s) at %d px: %s", name, b.path(), phoneWidth, msg)
	}
	if len(hidden) > 0 {
		b.t.Errorf("page %q (%s) at %d px hides columns off-screen: %s", name, b.path(), phoneWidth, strings.Join(hidden, "; "))
	}
	if len(vs) > 0 {
		b.t.Errorf("axe-core on %q (%s) at %d px: %d serious or critical violation(s):\n%s", name, b.path(), phoneWidth, len(vs), formatViolations(vs))
	}
	if r := b.atWidth(sidebarWidth, nil); r.problem() != "" {
		b.t.Errorf("page %q (%s) at %d px, beside the side menu: %s", name, b.path(), sidebarWidth, r.problem())
	}
}

// onPhone measures the current page on a phone-sized screen, calls also
// while the page is shown that way, and puts the desktop viewport back.
func (b *Browser) onPhone(also func()) widthReport {
	b.t.Helper()
	return b.atWidth(phoneWidth, also)
}

// atWidth is onPhone at another width.
func (b *Browser) atWidth(width int, also func()) widthReport {
	b.t.Helper()
	// Not EmulateMobile: a mobile viewport zooms out to fit wide content,
	// which would hide the culprits; the viewport meta is checked apart.
	b.do("emulate a narrower screen", chromedp.EmulateViewport(int64(width), 740, chromedp.EmulateScale(1)))
	defer b.do("leave the narrower screen", chromedp.EmulateViewport(1280, 900))
	r := run(b, "measure the page's width", chromedp.Evaluate[widthReport](fmt.Sprintf("%s(%d)", measureWidth, width)))
	if also != nil {
		also()
	}
	return r
}

// problem says what is wrong with the width, or "".
func (r widthReport) problem() string {
	switch {
	case !r.Meta:
		return `no <meta name="viewport" content="width=device-width, initial-scale=1">: a phone shows the page shrunk`
	case r.Scroll > r.Client:
		return fmt.Sprintf("it scrolls sideways (%d px of content in %d px; a phone would zoom out); sticking out: %s",
			r.Scroll, r.Client, strings.Join(r.Offenders, ", "))
	}
	return ""
}
