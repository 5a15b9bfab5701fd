package dashboard

import (
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// zeroPages is every page template with its page struct at its zero
// value: each must render, in both languages, without a session or data.
// A page added without a line here fails TestEveryTemplateIsListed.
func zeroPages() map[string]page {
	return map[string]page{
		"message":     &messagePage{},
		"login":       &loginPage{},
		"overview":    &overviewPage{},
		"keys":        &keysPage{},
		"key_created": &keyCreatedPage{},
		"key_revoke":  &keyRevokePage{},
		"team":        &teamPage{},
		"user_remove": &userRemovePage{},
		"audit":       &auditPage{},
		"account":     &accountPage{},
		// transactions.go, webhooks.go, reconciliation.go, phone.go
		"transactions":   &transactionsPage{},
		"transaction":    &transactionPage{},
		"webhooks":       &webhooksPage{},
		"webhook_secret": &secretPage{},
		"webhook_delete": &endpointDeletePage{},
		"deliveries":     &deliveriesPage{},
		"reconciliation": &reconciliationPage{},
		"phone":          &phonePage{},
	}
}

func testDashboard(t *testing.T) *Dashboard {
	t.Helper()
	d, err := New(Config{Secret: []byte(strings.Repeat("s", MinSecretBytes)), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEveryPageRendersFromZeroValues(t *testing.T) {
	d := testDashboard(t)
	for name, p := range zeroPages() {
		for _, lang := range []string{english, french} {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Accept-Language", lang)
			w := httptest.NewRecorder()
			d.render(w, r, http.StatusOK, name, p)
			body := w.Body.String()
			if w.Code != http.StatusOK {
				t.Errorf("%s (%s): status %d: %s", name, lang, w.Code, body)
				continue
			}
			if !strings.Contains(body, `<html lang="`+lang+`">`) || !strings.Contains(body, "</html>") {
				t.Errorf("%s (%s): not a whole page in its language", name, lang)
			}
			if w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("%s: Cache-Control %q", name, w.Header().Get("Cache-Control"))
			}
			if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, "onclick") {
				t.Errorf("%s: inline script or style, which the CSP refuses", name)
			}
		}
	}
}

func TestEveryTemplateIsListed(t *testing.T) {
	names, _ := fs.Glob(templateFS, "templates/*.html")
	listed := zeroPages()
	for _, p := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
		if _, ok := listed[name]; !ok && name != "layout" {
			t.Errorf("template %s has no entry in zeroPages", name)
		}
	}
}

var usedKey = regexp.MustCompile(`\.T "([a-z0-9_.]+)"`)

// TestCatalogue checks that English and French have the same keys, and
// that every key a template names exists.
func TestCatalogue(t *testing.T) {
	for k := range messages[english] {
		if _, ok := messages[french][k]; !ok {
			t.Errorf("%q has no French", k)
		}
	}
	for k := range messages[french] {
		if _, ok := messages[english][k]; !ok {
			t.Errorf("%q has no English", k)
		}
	}
	fs.WalkDir(templateFS, "templates", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, _ := templateFS.ReadFile(p)
		for _, m := range usedKey.FindAllStringSubmatch(string(b), -1) {
			if _, ok := messages[english][m[1]]; !ok {
				t.Errorf("%s uses %q, which is not in the catalogue", p, m[1])
			}
		}
		return nil
	})
	// The audit page names its entries' actions by a key it builds.
	for _, a := range team.Actions {
		if _, ok := messages[english]["audit.act."+a]; !ok {
			t.Errorf("audit action %q has no words in the catalogue", a)
		}
	}
	// So do a timeline's answers and a reconciliation case, by source.
	for _, source := range []string{payment.SourceCallback, payment.SourcePoll, payment.SourceExpiry, payment.SourceSandbox,
		payment.SourcePush, payment.SourceLateCheck} {
		for _, key := range []string{"source." + source, "tx.step.heard." + source} {
			if _, ok := messages[english][key]; !ok {
				t.Errorf("source %q has no words in the catalogue (%s)", source, key)
			}
		}
	}
}

func TestFormats(t *testing.T) {
	for n, want := range map[int64]string{0: "0 FCFA", 100: "100 FCFA", 1500: "1 500 FCFA", 1234567: "1 234 567 FCFA", -2500: "-2 500 FCFA"} {
		if got := fcfa(n); got != want {
			t.Errorf("fcfa(%d) = %q, want %q", n, got, want)
		}
	}
	for header, want := range map[string]string{"": "en", "fr-FR,fr;q=0.9,en;q=0.8": "fr", "en-GB,fr;q=0.5": "en",
		"de,fr;q=0.3": "fr", "fr;q=0.2,en;q=0.9": "en", "ar-TD": "en", "FR-td": "fr"} {
		if got := fromAcceptLanguage(header); got != want {
			t.Errorf("Accept-Language %q: %s, want %s", header, got, want)
		}
	}
	at := time.Date(2026, 3, 10, 23, 30, 5, 0, time.UTC)
	if got := string(when(at)); got != `<time datetime="2026-03-10T23:30:05Z" title="2026-03-10 23:30:05 UTC">11/03/2026 00:30</time>` {
		t.Errorf("when: %s", got)
	}
	if when(time.Time{}) != "–" || whenPtr(nil) != "–" {
		t.Error("a missing time is not a dash")
	}
	if !slices.Equal([]bool{localPath("/keys"), localPath("//evil.example"), localPath("https://x"), localPath("/\\x"), localPath("")},
		[]bool{true, false, false, false, false}) {
		t.Error("localPath admits another site")
	}
}

// TestSaid: the service's own English phrases are translated on a French
// page; any other English text (an operator's message, a network error)
// is marked lang="en" there, escaped, and left alone on an English page.
func TestSaid(t *testing.T) {
	fr, en := &layout{Lang: french}, &layout{Lang: english}
	for _, c := range []struct {
		l          *layout
		text, want string
	}{
		{fr, "no answer before expires_at", "pas de réponse avant l&#39;expiration (expires_at)"},
		{fr, "command line: amina@ops-1", "ligne de commande\u00a0: amina@ops-1"},
		{fr, "dial tcp 127.0.0.1:9: connect: connection refused <x>", `<span lang="en">dial tcp 127.0.0.1:9: connect: connection refused &lt;x&gt;</span>`},
		{en, "dial tcp <x>", "dial tcp &lt;x&gt;"},
		{en, "command line: amina@ops-1", "command line: amina@ops-1"},
		{fr, "", ""},
	} {
		if got := string(c.l.Said(c.text)); got != c.want {
			t.Errorf("%s Said(%q) = %q, want %q", c.l.Lang, c.text, got, c.want)
		}
	}
}
