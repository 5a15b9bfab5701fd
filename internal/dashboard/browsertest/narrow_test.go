package browsertest

import (
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"
)

// phoneWidth is the narrowest screen the dashboard must serve without
// scrolling sideways (the 360 px).
const phoneWidth = 360

// widthReport is what measureWidth finds on a page.
type widthReport struct {
	// Inner is the layout viewport's width: more than phoneWidth means the
	// page lacks <meta name="viewport" content="width=device-width">, so a
	// phone would show it shrunk.
	Inner int `json:"inner"`
	// Client and Scroll are the document's visible and total widths.
	Client int `json:"client"`
	Scroll int `json:"scroll"`
	// Offenders are the outermost elements sticking out on the right, outside
	// any container that scrolls by itself.
	Offenders []string `json:"offenders"`
}

const measureWidth = `(() => {
  const de = document.documentElement, w = de.clientWidth;
  const scrollsItself = el => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden' || o === 'clip') return true;
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
  return {inner: window.innerWidth, client: w, scroll: de.scrollWidth, offenders: out.map(o => o.d)};
})()`

// checkNarrow shows the current page on a 360 px wide phone screen, saves its
// screenshot as <name>-360.png, fails the test if the page scrolls sideways,
// and puts the desktop viewport back. It does not reload the page, so it is
// safe on a page that answered a form.
func (b *Browser) checkNarrow(name string) {
	b.t.Helper()
	r := b.onPhone(func() { b.screenshot(name + "-360") })
	if msg := r.problem(); msg != "" {
		b.t.Errorf("page %q (%s) at %d px: %s", name, b.path(), phoneWidth, msg)
	}
}

// onPhone measures the current page on a phone-sized screen, calls also
// while the page is shown that way, and puts the desktop viewport back.
func (b *Browser) onPhone(also func()) widthReport {
	b.t.Helper()
	b.do("emulate a phone", chromedp.EmulateViewport(phoneWidth, 740, chromedp.EmulateScale(1), chromedp.EmulateMobile))
	defer b.do("leave the phone", chromedp.EmulateViewport(1280, 900))
	r := run(b, "measure the page's width", chromedp.Evaluate[widthReport](measureWidth))
	if also != nil {
		also()
	}
	return r
}

// problem says what is wrong with the width, or "".
func (r widthReport) problem() string {
	switch {
	case r.Inner > phoneWidth:
		return fmt.Sprintf("the layout viewport is %d px wide; the page needs <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">", r.Inner)
	case r.Scroll > r.Client:
		return fmt.Sprintf("it scrolls sideways: %d px of content in %d px; sticking out: %s", r.Scroll, r.Client, strings.Join(r.Offenders, ", "))
	}
	return ""
}
