package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/momopay/momopay/internal/dashboard"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// Signing in is a bcrypt comparison; at the default cost, the many
// sign-ins of these tests take minutes under the race detector on a busy
// machine (and meet the server's write timeout).
func init() { store.PasswordCost = bcrypt.MinCost }

// password is every test user's password.
const password = "correct horse battery"

// eachEngine runs fn, in parallel, against a fresh server on each engine.
func eachEngine(t *testing.T, fn func(t *testing.T, b *bundle)) {
	t.Helper()
	testdb.Each(t, func(t *testing.T, engine string) {
		fn(t, setup(t, testserver.Options{DB: engine}))
	})
}

// bundle is a running server with its first merchant's owner.
type bundle struct {
	t     *testing.T
	s     *testserver.Server
	owner *team.User
}

func setup(t *testing.T, opts testserver.Options) *bundle {
	t.Helper()
	s := testserver.Start(t, opts)
	users, err := s.App.Users.List(context.Background(), s.MerchantID)
	if err != nil || len(users) != 1 || users[0].Role != team.Owner {
		t.Fatalf("the merchant's owner: %v %v", users, err)
	}
	return &bundle{t: t, s: s, owner: &users[0]}
}

// addUser adds a user with role to merchant.
func (b *bundle) addUser(merchantID, email string, role team.Role) *team.User {
	b.t.Helper()
	u, err := b.s.App.Users.Add(context.Background(), merchantID, email, role, password, time.Now())
	if err != nil {
		b.t.Fatalf("add %s: %v", email, err)
	}
	return u
}

// browser is one signed-in (or not) client: it keeps the session cookie
// by hand (Go's cookie jar does not send Secure cookies over http, which
// browsers do for localhost) and never follows redirects.
type browser struct {
	t       *testing.T
	base    string
	cookie  string
	headers map[string]string
	// others holds the other cookies the dashboard set (flash, language).
	others map[string]string
}

func (b *bundle) browser() *browser {
	return &browser{t: b.t, base: b.s.URL, headers: map[string]string{}}
}

// login signs in with the form and fails the test unless it worked.
func (b *bundle) login(email string) *browser {
	b.t.Helper()
	br := b.browser()
	r := br.postForm("/auth/login", url.Values{"email": {email}, "password": {password}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" || br.cookie == "" {
		b.t.Fatalf("sign in as %s: %d %s", email, r.status, r.body)
	}
	return br
}

type answer struct {
	status int
	header http.Header
	body   string
	cookie *http.Cookie // the session cookie set, if any
}

// errorCode is error.code of a JSON error envelope.
func (a answer) errorCode() string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(a.body), &env)
	return env.Error.Code
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (br *browser) do(req *http.Request) answer {
	br.t.Helper()
	a, err := br.send(req)
	if err != nil {
		br.t.Fatal(err)
	}
	return a
}

// send is do for any goroutine: it returns the transport's error rather
// than failing the test.
func (br *browser) send(req *http.Request) (answer, error) {
	if br.cookie != "" {
		req.AddCookie(&http.Cookie{Name: dashboard.SessionCookie, Value: br.cookie})
	}
	for name, value := range br.others {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	for k, v := range br.headers {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
	for _, c := range resp.Cookies() {
		if c.Name != dashboard.SessionCookie {
			if br.others == nil {
				br.others = map[string]string{}
			}
			br.others[c.Name] = c.Value
			if c.MaxAge < 0 {
				delete(br.others, c.Name)
			}
			continue
		}
		if c.Name == dashboard.SessionCookie {
			a.cookie = c
			br.cookie = c.Value
			if c.MaxAge < 0 {
				br.cookie = ""
			}
		}
	}
	return a, nil
}

func (br *browser) get(path string) answer {
	br.t.Helper()
	req, err := http.NewRequest("GET", br.base+path, nil)
	if err != nil {
		br.t.Fatal(err)
	}
	return br.do(req)
}

func (br *browser) postForm(path string, form url.Values) answer {
	br.t.Helper()
	req, err := http.NewRequest("POST", br.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		br.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return br.do(req)
}

func (br *browser) postJSON(path, body string) answer {
	br.t.Helper()
	req, err := http.NewRequest("POST", br.base+path, strings.NewReader(body))
	if err != nil {
		br.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return br.do(req)
}

// signedOut reports whether a page of the dashboard sends this browser
// to the sign-in page.
func (br *browser) signedOut() bool {
	br.t.Helper()
	r := br.get("/keys")
	return r.status == http.StatusSeeOther && strings.HasPrefix(r.header.Get("Location"), "/login")
}

var (
	describedBy = regexp.MustCompile(`aria-describedby="([^"]+)"`)
	fieldError  = regexp.MustCompile(`<p class="field-error"[^>]*>`)
)

// errorsTiedToFields checks a page's field errors: each has an id, and
// each aria-describedby names an element of the page, so a screen reader
// reads the error with its field.
func errorsTiedToFields(body string) error {
	for _, p := range fieldError.FindAllString(body, -1) {
		if !strings.Contains(p, ` id="`) {
			return fmt.Errorf("a field error is tied to no field: %s", p)
		}
	}
	for _, m := range describedBy.FindAllStringSubmatch(body, -1) {
		for _, id := range strings.Fields(m[1]) {
			if !strings.Contains(body, ` id="`+id+`"`) {
				return fmt.Errorf("aria-describedby names %q, which is not on the page", id)
			}
		}
	}
	return nil
}
