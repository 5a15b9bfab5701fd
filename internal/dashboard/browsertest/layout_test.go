package browsertest

import (
	"math"
	"strconv"
	"strings"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The checks of the page's own structure that axe-core cannot make for
// every state: axe reports a scroll container that holds nothing
// focusable only while it overflows, which depends on the data and the
// screen; these hold whatever the rows.

// tableRegions lists each visible table wrapper that a keyboard cannot
// reach or a screen reader cannot name: a wrapper scrolls sideways when
// its table is wider than the screen, and only a focusable one can then be
// scrolled without a mouse.
const tableRegions = `(() => {
  const name = el => el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).trim().split(/\s+/).join('.') : '');
  const out = [];
  for (const el of document.querySelectorAll('.table-wrap')) {
    if (!el.getClientRects().length) continue; // inside a folded <details>
    const bad = [];
    if (el.getAttribute('tabindex') !== '0') bad.push('no tabindex="0"');
    if (el.getAttribute('role') !== 'region') bad.push('no role="region"');
    if (!(el.getAttribute('aria-label') || '').trim() && !el.getAttribute('aria-labelledby')) bad.push('no aria-label');
    if (bad.length) out.push(name(el) + ' around "' + (el.querySelector('th') || el).textContent.trim().slice(0, 40) + '": ' + bad.join(', '));
  }
  return out;
})()`

// checkTableRegions fails the test for each table wrapper of the page
// that is not a named, focusable region.
func (b *Browser) checkTableRegions(name string) {
	b.t.Helper()
	if bad := run(b, "look at the table wrappers", chromedp.Evaluate[[]string](tableRegions)); len(bad) > 0 {
		b.t.Errorf("page %q (%s): table wrappers a keyboard cannot scroll:\n  %s", name, b.path(), strings.Join(bad, "\n  "))
	}
}

// hiddenColumns lists the visible tables that scroll sideways: on a phone
// each column and action must be in view without it.
const hiddenColumns = `(() => {
  const out = [];
  for (const el of document.querySelectorAll('.table-wrap')) {
    if (!el.getClientRects().length) continue;
    if (el.scrollWidth > el.clientWidth + 1) {
      const head = [...el.querySelectorAll('thead th')].map(th => th.textContent.trim()).filter(Boolean).join(', ');
      out.push('the table of ' + head + ' (' + el.scrollWidth + ' px in ' + el.clientWidth + ' px)');
    }
  }
  return out;
})()`

// focusState is what readFocus finds about the focused element.
type focusState struct {
	Name    string `json:"name"`
	Style   string `json:"style"`
	Width   string `json:"width"`
	Outline string `json:"outline"` // rgb(…) or rgba(…)
	Behind  string `json:"behind"`  // the background the ring is drawn on
}

// readFocus describes document.activeElement: its outline, and the first
// opaque background of its ancestors, where an offset outline is drawn.
const readFocus = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return {name: ''};
  const cs = getComputedStyle(el);
  let behind = 'rgb(255, 255, 255)';
  for (let p = el.parentElement; p; p = p.parentElement) {
    const bg = getComputedStyle(p).backgroundColor;
    if (bg && bg !== 'transparent' && !/rgba\(.*,\s*0\)$/.test(bg)) { behind = bg; break; }
  }
  const label = (el.getAttribute('aria-label') || el.textContent || el.name || '').trim().slice(0, 30);
  return {name: el.tagName.toLowerCase() + ' "' + label + '"', style: cs.outlineStyle, width: cs.outlineWidth, outline: cs.outlineColor, behind};
})()`

// checkFocusRings tabs through the current page (at most tabs stops, or
// once round it) and fails the test for each focused element whose focus ring is missing or has less than 3:1
// contrast with the background it is drawn on (WCAG 1.4.11).
func (b *Browser) checkFocusRings(name string, tabs int) {
	b.t.Helper()
	if b.pagesOnly {
		return
	}
	seen := map[string]bool{}
	for range tabs {
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		f := run(b, "read the focus", chromedp.Evaluate[focusState](readFocus))
		if f.Name == "" {
			continue
		}
		if seen[f.Name] {
			break // round the page and back
		}
		seen[f.Name] = true
		if f.Style == "none" || f.Width == "0px" {
			b.t.Errorf("page %q: %s shows no focus ring", name, f.Name)
			continue
		}
		if c := contrast(f.Outline, f.Behind); c < 3 {
			b.t.Errorf("page %q: the focus ring of %s (%s on %s) has contrast %.2f:1; want at least 3:1", name, f.Name, f.Outline, f.Behind, c)
		}
	}
	if len(seen) == 0 {
		b.t.Errorf("page %q: Tab focused nothing", name)
	}
}

// contrast is the WCAG contrast ratio of two CSS rgb() colours; an
// unreadable colour counts as no contrast.
func contrast(a, b string) float64 {
	la, oka := luminance(a)
	lb, okb := luminance(b)
	if !oka || !okb {
		return 0
	}
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

// luminance is the relative luminance of "rgb(r, g, b)" or "rgba(r, g, b, a)".
func luminance(css string) (float64, bool) {
	inner, ok := strings.CutPrefix(css, "rgb(")
	if !ok {
		inner, ok = strings.CutPrefix(css, "rgba(")
	}
	if !ok {
		return 0, false
	}
	parts := strings.Split(strings.TrimSuffix(inner, ")"), ",")
	if len(parts) < 3 {
		return 0, false
	}
	var lin [3]float64
	for i := range 3 {
		v, err := strconv.ParseFloat(strings.TrimSpace(parts[i]), 64)
		if err != nil {
			return 0, false
		}
		c := v / 255
		if c <= 0.04045 {
			lin[i] = c / 12.92
		} else {
			lin[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*lin[0] + 0.7152*lin[1] + 0.0722*lin[2], true
}
