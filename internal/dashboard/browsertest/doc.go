// Package browsertest drives the merchant dashboard in a real browser: Debian's
// chromium, headless, through chromedp. Its tests walk a merchant's journey
// against the whole momopay program, run axe-core on every page they visit
// (failing on any serious or critical violation), check that every page fits
// a 360 px wide screen, and save a screenshot of each page under screenshots/
// (git ignores it).
//
// The tests need chromium and axe-core:
//
//	apt-get install chromium
//	(cd internal/dashboard/browsertest && npm ci)
//
// Without them they skip, saying so; with MOMOPAY_REQUIRE_BROWSER=1 (which
// .ci/run sets) they fail instead. MOMOPAY_CHROMIUM names another browser
// binary; MOMOPAY_SCREENSHOTS another folder for the screenshots.
//
// The package has no code outside its tests.
package browsertest
