package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// TestDatabaseOutOfReach: while another process holds SQLite's write lock,
// a change made in the dashboard is answered with a 503 page in the
// user's language, saying to try again, with Retry-After, within the
// request budget (so before the server's write timeout would cut the
// connection); pages that only read still show, even when the session is
// due for renewal (a write, left for the next request). Once the lock is
// let go, the same change goes through and the session is renewed.
// Before, the change got the 500 "internal error" page, logged as an
// error, or no answer at all, and so did any page due to renew. A JSON
// caller gets the error envelope.
func TestDatabaseOutOfReach(t *testing.T) {
	t.Parallel()
	clock := testserver.NewClock(time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC))
	b := setup(t, testserver.Options{DB: "sqlite", Now: clock.Now})
	br := b.login(b.owner.Email)
	lock := testdb.HoldSQLiteWriteLock(t, b.s.DatabaseURL)

	r := br.postForm("/keys", url.Values{})
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "2" ||
		!strings.Contains(r.body, "<h1>Temporarily unavailable</h1>") || !strings.Contains(r.body, "Try again in a few seconds") {
		t.Errorf("a key created while the database is locked: %d, Retry-After %q\n%s", r.status, r.header.Get("Retry-After"), r.body)
	}
	fr := b.browser()
	fr.headers["Accept-Language"] = "fr"
	if r := fr.postForm("/auth/login", url.Values{"email": {b.owner.Email}, "password": {password}}); r.status != http.StatusServiceUnavailable ||
		!strings.Contains(r.body, "<h1>Momentanément indisponible</h1>") {
		t.Errorf("signing in while the database is locked, in French: %d\n%s", r.status, r.body)
	}
	clock.Advance(2 * time.Minute) // the session is due for renewal
	script := b.browser()
	if r := script.postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"`+password+`"}`); r.status != http.StatusServiceUnavailable ||
		r.errorCode() != "GATEWAY_UNAVAILABLE" || r.header.Get("Retry-After") != "2" {
		t.Errorf("a JSON sign-in while the database is locked: %d %s", r.status, r.body)
	}
	if r := br.get("/transactions"); r.status != http.StatusOK || r.cookie != nil {
		t.Errorf("a page that only reads, while the database is locked: %d, cookie %v", r.status, r.cookie)
	}
	// Every page, at once: each reads from the readers, not the writer.
	var wg sync.WaitGroup
	for _, page := range []string{"/", "/keys", "/webhooks", "/webhooks/deliveries", "/team", "/audit", "/reconciliation", "/account", "/phone"} {
		wg.Go(func() {
			if r := br.get(page); r.status != http.StatusOK {
				t.Errorf("%s while the database is locked: %d", page, r.status)
			}
		})
	}
	wg.Wait()

	if _, err := lock.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if r := br.postForm("/keys", url.Values{}); r.status != http.StatusCreated || r.cookie == nil {
		t.Errorf("a key created once the lock is gone: %d, renewed cookie %v\n%s", r.status, r.cookie, r.body)
	}
}
