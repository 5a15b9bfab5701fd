package browsertest

import (
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"
)

// violation is one axe-core rule broken on a page, with the elements that
// break it.
type violation struct {
	ID      string `json:"id"`
	Impact  string `json:"impact"`
	Help    string `json:"help"`
	HelpURL string `json:"helpUrl"`
	Nodes   []struct {
		Target  string `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

// runAxe is evaluated in the page once axe-core is there. It checks the
// WCAG 2.0, 2.1 and 2.2 A and AA rules and axe's best practices.
const runAxe = `(async () => {
  const r = await axe.run(document, {
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']},
    resultTypes: ['violations'],
  });
  return r.violations.map(v => ({
    id: v.id, impact: v.impact || '', help: v.help, helpUrl: v.helpUrl,
    nodes: v.nodes.map(n => ({target: String(n.target), html: n.html, summary: n.failureSummary || ''})),
  }));
})()`

// axeViolations injects axe-core into the current page (DevTools evaluation,
// so the page's Content-Security-Policy does not stop it), runs it, logs the
// minor and moderate violations and returns the serious and critical ones.
func (b *Browser) axeViolations() []violation {
	b.t.Helper()
	if !run(b, "look for axe-core", chromedp.Evaluate[bool](`typeof window.axe !== 'undefined'`)) {
		b.do("inject axe-core", chromedp.Evaluate[chromedp.Void](b.axe))
	}
	all := run(b, "run axe-core", chromedp.Evaluate[[]violation](runAxe, chromedp.EvalAwaitPromise))
	var bad []violation
	for _, v := range all {
		if v.Impact == "serious" || v.Impact == "critical" {
			bad = append(bad, v)
			continue
		}
		b.t.Logf("axe-core on %s (%s, not failing): %s", b.path(), v.Impact, formatViolations([]violation{v}))
	}
	return bad
}

// formatViolations writes violations for a person: rule, impact, what it
// asks, where to read more, and each offending element.
func formatViolations(vs []violation) string {
	var sb strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&sb, "  [%s] %s: %s (%s)\n", v.Impact, v.ID, v.Help, v.HelpURL)
		for i, n := range v.Nodes {
			if i == 5 {
				fmt.Fprintf(&sb, "      … and %d more\n", len(v.Nodes)-5)
				break
			}
			fmt.Fprintf(&sb, "    - %s\n      %s\n", n.Target, truncate(n.HTML, 200))
			for _, line := range strings.Split(strings.TrimSpace(n.Summary), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					fmt.Fprintf(&sb, "      %s\n", line)
				}
			}
		}
	}
	return sb.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
