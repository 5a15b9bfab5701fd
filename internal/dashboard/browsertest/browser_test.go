package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// requireBrowser is set by .ci/run: there a missing browser or axe-core is a
// failure, not a skip.
var requireBrowser = os.Getenv("MOMOPAY_REQUIRE_BROWSER") == "1"

const howToEnable = "install chromium (apt-get install chromium) and axe-core " +
	"(cd internal/dashboard/browsertest && npm ci); MOMOPAY_REQUIRE_BROWSER=1 makes these tests mandatory"

// missing skips the test, or fails it when the browser tests are mandatory.
func missing(t testing.TB, what string) {
	t.Helper()
	if requireBrowser {
		t.Fatalf("%s, and MOMOPAY_REQUIRE_BROWSER=1: %s", what, howToEnable)
	}
	t.Skipf("%s: skipping the browser tests; to run them, %s", what, howToEnable)
}

// chromiumPath finds the browser: MOMOPAY_CHROMIUM, else Debian's chromium.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MOMOPAY_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			missing(t, fmt.Sprintf("MOMOPAY_CHROMIUM=%s is not an executable", p))
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "chromium is not installed")
	return ""
}

var axeOnce = sync.OnceValues(func() ([]byte, error) {
	return os.ReadFile(filepath.Join("node_modules", "axe-core", "axe.min.js"))
})

// axeSource is axe-core's script, installed by npm ci from package-lock.json.
func axeSource(t testing.TB) string {
	t.Helper()
	src, err := axeOnce()
	if errors.Is(err, os.ErrNotExist) {
		missing(t, "axe-core is not installed (node_modules/axe-core/axe.min.js)")
	}
	if err != nil {
		t.Fatalf("read axe-core: %v", err)
	}
	return string(src)
}

// screenshotDir is where every visited page's picture goes.
func screenshotDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MOMOPAY_SCREENSHOTS")
	if dir == "" {
		dir = "screenshots"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("screenshot folder: %v", err)
	}
	return dir
}

// Browser is one headless chromium with one tab, its own profile, and the
// base URL of the server under test.
type Browser struct {
	t       testing.TB
	ctx     context.Context
	base    string
	axe     string
	shots   string
	prefix  string
	checked map[string]bool
	// pagesOnly turns check and checkNarrow off: a second run of the same
	// pages on another engine tests the data paths, not the markup again.
	pagesOnly bool
	// noScript is set by withoutJavaScript.
	noScript bool
	// console gathers the pages' script errors and security (CSP) reports.
	console *consoleLog
}

// consoleLog holds what the pages said that a reader would see as a fault.
type consoleLog struct {
	mu   sync.Mutex
	msgs []string
}

// listen collects, for the tab of ctx, uncaught exceptions, console.error
// calls, security reports (a Content-Security-Policy refusal) and failed
// loads of the dashboard's own static files.
func (c *consoleLog) listen(ctx context.Context) {
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			bad := m.IsException() || m.Source == "security" ||
				(m.Type == chromedp.ConsoleError && (m.Source == "" || m.Source == "javascript" || strings.Contains(m.URL, "/static/")))
			if !bad {
				continue
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, fmt.Sprintf("%s (%s %s) at %s", m.Text, m.Type, m.Source, m.URL))
			c.mu.Unlock()
		}
	}()
}

// take returns and forgets what was collected.
func (c *consoleLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs := c.msgs
	c.msgs = nil
	return msgs
}

// withoutJavaScript turns the pages' scripts off in this tab (and the tabs
// it opens): every main action must work without them.
func (b *Browser) withoutJavaScript() {
	b.t.Helper()
	b.noScript = true
	b.do("turn JavaScript off", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
}

// stepTimeout bounds each action; the race detector and a busy machine make
// the first pages slow.
const stepTimeout = 30 * time.Second

// newBrowser starts chromium for t with a fresh profile; it is closed at t's
// cleanup. prefix names t's screenshots (e.g. "sqlite").
func newBrowser(t testing.TB, base, prefix string) *Browser {
	t.Helper()
	exe := chromiumPath(t)
	axe := axeSource(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// A tab in the background (the journey watches a payment's page
		// while it works in another) runs its timers and renders as usual.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(1280, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	start, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // starts the browser with no deadline of its own
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	if err := chromedp.Do(start, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("set the viewport: %v", err)
	}
	b := &Browser{t: t, ctx: ctx, base: base, axe: axe, shots: screenshotDir(t), prefix: prefix, checked: map[string]bool{}, console: &consoleLog{}}
	b.console.listen(ctx)
	return b
}

// newTab opens another tab in the same browser (same cookies); it closes
// at the test's cleanup.
func (b *Browser) newTab() *Browser {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	// The first action opens the tab and binds it to its context: give it
	// the tab's own, not a step's, which ends with the step.
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open a tab: %v", err)
	}
	tab := *b
	tab.ctx = ctx
	tab.console.listen(ctx)
	tab.do("size the tab", chromedp.EmulateViewport(1280, 900))
	if b.noScript {
		tab.withoutJavaScript()
	}
	return &tab
}

// do runs steps with the step timeout, failing the test on error.
func (b *Browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s (at %s): %v", what, b.location(), err)
	}
}

// run runs one action with a value.
func run[T any](b *Browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s (at %s): %v", what, b.location(), err)
	}
	return v
}

// location is the tab's URL, for messages.
func (b *Browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "?"
	}
	return loc
}

// path is the tab's URL path (and query), relative to the server.
func (b *Browser) path() string {
	return strings.TrimPrefix(b.location(), b.base)
}

// open navigates to path (relative to the server) and returns the status of
// the document's response.
func (b *Browser) open(path string) int64 {
	b.t.Helper()
	resp := run(b, "open "+path, chromedp.NavigateResponse(b.base+path))
	if resp == nil {
		return 0
	}
	return resp.Status
}

// submit clicks sel (a submit button or a link) and waits for the page it
// leads to; it returns that page's response.
func (b *Browser) submit(sel string) *network.Response {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		b.t.Fatalf("click %s (at %s): %v", sel, b.location(), err)
	}
	return resp
}

// fill types v into the field sel, replacing what it held.
func (b *Browser) fill(sel, v string) {
	b.t.Helper()
	b.do("fill "+sel, chromedp.Clear(chromedp.CSS(sel)), chromedp.SendKeys(chromedp.CSS(sel), v))
}

// text is the visible text of the first element matching sel.
func (b *Browser) text(sel string) string {
	b.t.Helper()
	return run(b, "read "+sel, chromedp.Text(chromedp.CSS(sel), chromedp.NodeReady))
}

// bodyText is the page's whole visible text.
func (b *Browser) bodyText() string {
	b.t.Helper()
	return run(b, "read the page", chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
}

// focused names the element that has the focus, as tag#id, or tag.class
// for one without an id; "" for none (the page's body). It reads it once
// the page has loaded, so after the page's own scripts placed it (a click's
// response can come back before they ran).
func (b *Browser) focused() string {
	b.t.Helper()
	return run(b, "read the focus", chromedp.Evaluate[string](`new Promise(resolve => {
  const read = () => {
    const el = document.activeElement;
    resolve(!el || el === document.body ? '' :
      el.tagName.toLowerCase() + (el.id ? '#' + el.id : el.classList.length ? '.' + el.classList[0] : ''));
  };
  if (document.readyState === 'complete') read(); else window.addEventListener('load', read);
})`, chromedp.EvalAwaitPromise))
}

// has reports whether sel matches an element now, without waiting.
func (b *Browser) has(sel string) bool {
	b.t.Helper()
	n := run(b, "count "+sel, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	return n > 0
}

// waitText polls until the page's text (folded details included) matches
// re or the step timeout ends, reloading every second when reload is set
// (for pages without live update).
func (b *Browser) waitText(re *regexp.Regexp, reload bool) string {
	b.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		txt := run(b, "read the page", chromedp.Evaluate[string](`document.body ? document.body.textContent : ""`))
		if re.MatchString(txt) {
			return txt
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("page %s never showed %s; it shows:\n%s", b.path(), re, txt)
		}
		time.Sleep(500 * time.Millisecond)
		if reload || b.noScript {
			b.do("reload", chromedp.Reload())
		}
	}
}

// unfold opens every folded <details> of the page, as a reader would.
func (b *Browser) unfold() {
	b.t.Helper()
	b.do("unfold the details", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details:not(.menu-toggle)').forEach(d => { d.open = true; })`))
}

// check runs axe-core on the current page, checks its table wrappers
// (checkTableRegions) and that none scrolls sideways on a desktop screen,
// and saves its screenshot as name.png. Call it on every page the journey
// visits.
func (b *Browser) check(name string) {
	b.t.Helper()
	if b.pagesOnly {
		return
	}
	b.checked[name] = true
	start := time.Now()
	b.screenshot(name)
	shot := time.Since(start)
	vs := b.axeViolations()
	b.t.Logf("checked %s: screenshot %s, axe-core %s", name, shot.Round(time.Millisecond), (time.Since(start) - shot).Round(time.Millisecond))
	if msgs := b.console.take(); len(msgs) > 0 {
		b.t.Errorf("the browser reported faults up to page %q (%s):\n  %s", name, b.path(), strings.Join(msgs, "\n  "))
	}
	if len(vs) > 0 {
		b.t.Errorf("axe-core on %q (%s): %d serious or critical violation(s):\n%s", name, b.path(), len(vs), formatViolations(vs))
	}
	b.checkTableRegions(name)
	if hidden := run(b, "look for tables scrolling sideways", chromedp.Evaluate[[]string](hiddenColumns)); len(hidden) > 0 {
		b.t.Errorf("page %q (%s) on a desktop screen hides columns off to the side: %s", name, b.path(), strings.Join(hidden, "; "))
	}
}

// screenshot saves the whole page as <prefix>-<name>.png.
func (b *Browser) screenshot(name string) {
	b.t.Helper()
	png := run(b, "screenshot", chromedp.FullScreenshot(100))
	file := filepath.Join(b.shots, b.prefix+"-"+name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Fatalf("save screenshot: %v", err)
	}
}
