package dashboard_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testserver"
)

var shownKey = regexp.MustCompile(`service_live_[A-Za-z0-9]{32}`)

func TestAPIKeyShownOnceAndRevoked(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		r := br.postForm("/keys", nil)
		keys := shownKey.FindAllString(r.body, -1)
		if r.status != http.StatusCreated || len(keys) != 1 {
			t.Fatalf("create: %d, keys %v", r.status, keys)
		}
		key := keys[0]
		if r.header.Get("Cache-Control") != "no-store" || !strings.Contains(r.body, `data-copy="new-key"`) {
			t.Errorf("the key page: Cache-Control %q, copy button missing?", r.header.Get("Cache-Control"))
		}
		// The key works on /v1…
		req, _ := http.NewRequest("GET", b.s.URL+"/v1/transactions", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if a := b.browser().do(req); a.status != http.StatusOK {
			t.Fatalf("the new key on /v1: %d", a.status)
		}
		// …and is never shown again: the list has its prefix only.
		list := br.get("/keys")
		if strings.Contains(list.body, key) || !strings.Contains(list.body, key[:len("service_live_")+6]+"…") {
			t.Errorf("the list shows the key, or not its prefix")
		}
		for _, path := range []string{"/", "/keys", "/audit"} {
			if strings.Contains(br.get(path).body, key) {
				t.Errorf("%s shows the key again", path)
			}
		}
		id := regexp.MustCompile(`/keys/([0-9a-f-]{36})/revoke`).FindAllStringSubmatch(list.body, -1)
		if len(id) != 2 { // testserver's key and this one
			t.Fatalf("revoke links: %v", id)
		}
		// Revoking asks first, then revokes.
		var newID string
		for _, m := range id {
			if confirm := br.get("/keys/" + m[1] + "/revoke"); strings.Contains(confirm.body, key[:len("service_live_")+6]) {
				newID = m[1]
				if confirm.status != http.StatusOK || !strings.Contains(confirm.body, `method="post"`) {
					t.Errorf("confirmation: %d", confirm.status)
				}
			}
		}
		if r := br.postForm("/keys/"+newID+"/revoke", nil); r.status != http.StatusSeeOther || r.header.Get("Location") != "/keys" {
			t.Fatalf("revoke: %d", r.status)
		}
		req, _ = http.NewRequest("GET", b.s.URL+"/v1/transactions", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if a := b.browser().do(req); a.status != http.StatusUnauthorized {
			t.Errorf("a revoked key on /v1: %d", a.status)
		}
		if page := br.get("/keys"); !strings.Contains(page.body, "The key was revoked.") || !strings.Contains(page.body, "Revoked") {
			t.Error("no flash or revoked state after revoking")
		}
		// The back button's confirmation of the revoked key says it is
		// revoked already, and leads back to the keys; to another
		// merchant the key is not found.
		if again := br.get("/keys/" + newID + "/revoke"); again.status != http.StatusOK || !strings.Contains(again.body, "This key is already revoked") ||
			!strings.Contains(again.body, `href="/keys"`) || strings.Contains(again.body, `method="post" action="/keys/`+newID) {
			t.Errorf("the revoked key's confirmation: %d\n%s", again.status, again.body)
		}
		otherID, _ := b.s.NewMerchant(t)
		rival := b.login(b.addUser(otherID, "rival@example.com", team.Owner).Email)
		if r := rival.get("/keys/" + newID + "/revoke"); r.status != http.StatusNotFound {
			t.Errorf("another merchant's revoked key: %d, want 404", r.status)
		}
	})
}

// TestKeysBounded: with the most active keys allowed, the create form
// makes none and leads back to the key list, which says why (in French
// too); revoking one makes room again.
func TestKeysBounded(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		active, err := b.s.App.APIKeys.List(ctx, b.s.MerchantID)
		if err != nil {
			t.Fatal(err)
		}
		for range store.MaxActiveKeys - len(active) {
			if _, _, err := b.s.App.APIKeys.Create(ctx, b.s.MerchantID, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		br := b.login(b.owner.Email)
		for _, c := range []struct{ lang, want string }{
			{"en", "No key was made: an account has at most 50 active API keys."},
			{"fr", "Aucune clé créée\u00a0: un compte a au plus 50 clés d'API actives."},
		} {
			br.headers["Accept-Language"] = c.lang
			r := br.postForm("/keys", nil)
			if r.status != http.StatusSeeOther || r.header.Get("Location") != "/keys" || shownKey.MatchString(r.body) {
				t.Fatalf("a key past the bound (%s): %d to %q", c.lang, r.status, r.header.Get("Location"))
			}
			if page := br.get("/keys"); !strings.Contains(html.UnescapeString(page.body), c.want) {
				t.Errorf("the key list (%s) does not say why:\n%s", c.lang, page.body)
			}
		}
		keys, _ := b.s.App.APIKeys.List(ctx, b.s.MerchantID)
		if len(keys) != store.MaxActiveKeys {
			t.Fatalf("%d keys, want %d", len(keys), store.MaxActiveKeys)
		}
		if _, err := b.s.App.APIKeys.Revoke(ctx, b.s.MerchantID, keys[1].ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		if r := br.postForm("/keys", nil); r.status != http.StatusCreated || !shownKey.MatchString(r.body) {
			t.Errorf("a key once one was revoked: %d", r.status)
		}
	})
}

// TestKeyFormSentTwice: the create form sent again with its token (a
// reload of the new key's page) makes no second key and says which key
// the first sending made, without the key; a new showing of the list has
// a new token, and a form without one still makes a key.
func TestKeyFormSentTwice(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		tokenOf := func() string {
			m := regexp.MustCompile(`name="request" value="([A-Z2-7]{26})"`).FindStringSubmatch(br.get("/keys").body)
			if m == nil {
				t.Fatal("the key list has no form token")
			}
			return m[1]
		}
		revokeLinks := func() int {
			return len(regexp.MustCompile(`/keys/[0-9a-f-]{36}/revoke`).FindAllString(br.get("/keys").body, -1))
		}
		before := revokeLinks()
		// The form is read within the dashboard's bound: a huge one makes
		// nothing.
		if r := br.postForm("/keys", url.Values{"request": {strings.Repeat("A", 100<<10)}}); r.status != http.StatusRequestEntityTooLarge || revokeLinks() != before {
			t.Fatalf("an oversized form: %d", r.status)
		}
		token := tokenOf()
		first := br.postForm("/keys", url.Values{"request": {token}})
		keys := shownKey.FindAllString(first.body, -1)
		if first.status != http.StatusCreated || len(keys) != 1 {
			t.Fatalf("first sending: %d, keys %v", first.status, keys)
		}
		again := br.postForm("/keys", url.Values{"request": {token}})
		prefix := keys[0][:len("service_live_")+6]
		if again.status != http.StatusConflict || shownKey.MatchString(again.body) ||
			!strings.Contains(again.body, "This key was already created") || !strings.Contains(again.body, prefix+"…") ||
			!regexp.MustCompile(`href="/keys/[0-9a-f-]{36}/revoke"`).MatchString(again.body) {
			t.Fatalf("second sending: %d\n%s", again.status, again.body)
		}
		if n := revokeLinks(); n != before+1 {
			t.Fatalf("%d keys after sending one form twice, want %d", n, before+1)
		}
		if audit := br.get("/audit").body; strings.Count(audit, prefix) != 1 {
			t.Errorf("the audit log names %s %d times, want once", prefix, strings.Count(audit, prefix))
		}
		// A new showing, a new token, a new key; and a form without a
		// token (or with a malformed one) makes a key each time.
		next := tokenOf()
		if next == token {
			t.Fatal("the list showed the same token twice")
		}
		for _, form := range []url.Values{{"request": {next}}, nil, nil, {"request": {"x"}}, {"request": {"x"}}} {
			if r := br.postForm("/keys", form); r.status != http.StatusCreated || !shownKey.MatchString(r.body) {
				t.Fatalf("create with %v: %d", form, r.status)
			}
		}
		if n := revokeLinks(); n != before+6 {
			t.Fatalf("%d keys, want %d", n, before+6)
		}
		// The page's link revokes that key, as any other.
		id := regexp.MustCompile(`href="/keys/([0-9a-f-]{36})/revoke"`).FindStringSubmatch(again.body)[1]
		if r := br.postForm("/keys/"+id+"/revoke", nil); r.status != http.StatusSeeOther {
			t.Fatalf("revoke the key the form made: %d", r.status)
		}
		req, _ := http.NewRequest("GET", b.s.URL+"/v1/transactions", nil)
		req.Header.Set("Authorization", "Bearer "+keys[0])
		if a := b.browser().do(req); a.status != http.StatusUnauthorized {
			t.Errorf("the revoked key on /v1: %d", a.status)
		}
	})
}

// TestRoleMatrix: what each role may do, checked on the server whatever
// the pages show.
func TestRoleMatrix(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		b.addUser(b.s.MerchantID, "dev@example.com", team.Developer)
		b.addUser(b.s.MerchantID, "viewer@example.com", team.Viewer)
		keyID := keyIDs(t, b, b.s.MerchantID)[0]
		newUser := url.Values{"email": {"new@example.com"}, "role": {"viewer"}, "password": {password}}
		type step struct {
			method, path string
			form         url.Values
		}
		steps := map[string]step{
			"overview":       {"GET", "/", nil},
			"keys":           {"GET", "/keys", nil},
			"create key":     {"POST", "/keys", nil},
			"confirm revoke": {"GET", "/keys/" + keyID + "/revoke", nil},
			"team":           {"GET", "/team", nil},
			"add user":       {"POST", "/team", newUser},
			"audit":          {"GET", "/audit", nil},
			"account":        {"GET", "/account", nil},
		}
		allowed := map[team.Role]map[string]int{
			team.Owner:     {"overview": 200, "keys": 200, "create key": 201, "confirm revoke": 200, "team": 200, "add user": 303, "audit": 200, "account": 200},
			team.Developer: {"overview": 200, "keys": 200, "create key": 201, "confirm revoke": 200, "team": 403, "add user": 403, "audit": 403, "account": 200},
			team.Viewer:    {"overview": 200, "keys": 200, "create key": 403, "confirm revoke": 403, "team": 403, "add user": 403, "audit": 403, "account": 200},
		}
		emails := map[team.Role]string{team.Owner: b.owner.Email, team.Developer: "dev@example.com", team.Viewer: "viewer@example.com"}
		for role, want := range allowed {
			br := b.login(emails[role])
			for name, s := range steps {
				var r answer
				if s.method == "GET" {
					r = br.get(s.path)
				} else {
					r = br.postForm(s.path, s.form)
				}
				if r.status != want[name] {
					t.Errorf("%s: %s: %d, want %d", role, name, r.status, want[name])
				}
			}
			if role == team.Viewer {
				if page := br.get("/keys").body; strings.Contains(page, `action="/keys"`) || strings.Contains(page, "/revoke") {
					t.Error("a viewer is offered to create or revoke keys")
				}
				if strings.Contains(br.get("/").body, `href="/team"`) {
					t.Error("a viewer is offered the team page")
				}
			}
		}
	})
}

func keyIDs(t *testing.T, b *bundle, merchantID string) []string {
	t.Helper()
	keys, err := b.s.App.APIKeys.List(context.Background(), merchantID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

// TestMerchantIsolation: merchant A's ids in merchant B's session find
// nothing (404) and change nothing.
func TestMerchantIsolation(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		otherID, otherKey := b.s.NewMerchant(t)
		otherKeyID := keyIDs(t, b, otherID)[0]
		others, _ := b.s.App.Users.List(context.Background(), otherID)
		otherUser := others[0]
		br := b.login(b.owner.Email)
		for _, path := range []string{"/keys/" + otherKeyID + "/revoke", "/team/" + otherUser.ID + "/remove", "/keys/not-an-id/revoke"} {
			if r := br.get(path); r.status != http.StatusNotFound {
				t.Errorf("GET %s: %d", path, r.status)
			}
		}
		for _, s := range []struct {
			path string
			form url.Values
		}{
			{"/keys/" + otherKeyID + "/revoke", nil},
			{"/team/" + otherUser.ID + "/remove", nil},
			{"/team/" + otherUser.ID + "/role", url.Values{"role": {"viewer"}}},
		} {
			if r := br.postForm(s.path, s.form); r.status != http.StatusNotFound {
				t.Errorf("POST %s: %d", s.path, r.status)
			}
		}
		req, _ := http.NewRequest("GET", b.s.URL+"/v1/transactions", nil)
		req.Header.Set("Authorization", "Bearer "+otherKey)
		if a := b.browser().do(req); a.status != http.StatusOK {
			t.Errorf("the other merchant's key was revoked: %d", a.status)
		}
		if u, err := b.s.App.Users.User(context.Background(), otherID, otherUser.ID); err != nil || u.Role != team.Owner {
			t.Errorf("the other merchant's owner was changed: %v %v", u, err)
		}
		// Nor does another merchant's data show on B's pages.
		if strings.Contains(br.get("/team").body, otherUser.Email) || strings.Contains(br.get("/keys").body, otherKeyID) {
			t.Error("another merchant's user or key is listed")
		}
	})
}

func TestTeamManagement(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		r := br.postForm("/team", url.Values{"email": {"not-an-email"}, "role": {"viewer"}, "password": {"short"}})
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `aria-invalid="true"`) || !strings.Contains(r.body, "not-an-email") {
			t.Errorf("invalid user: %d", r.status)
		}
		// Not text, or control characters: refused, not stored altered.
		for _, bad := range []url.Values{
			{"email": {"bad\xff@example.com"}, "role": {"viewer"}, "password": {password}},
			{"email": {"bad\x01@example.com"}, "role": {"viewer"}, "password": {password}},
			{"email": {"nul@example.com"}, "role": {"viewer"}, "password": {"abcdefg\x00hijklmn"}},
			{"email": {"tab@example.com"}, "role": {"viewer"}, "password": {"abcdefg\thijklmn"}},
		} {
			if r := br.postForm("/team", bad); r.status != http.StatusUnprocessableEntity {
				t.Errorf("add %q with password %q: %d, want 422", bad.Get("email"), bad.Get("password"), r.status)
			}
		}
		if users, _ := b.s.App.Users.List(context.Background(), b.s.MerchantID); len(users) != 1 {
			t.Errorf("%d users after the refused additions, want the owner alone", len(users))
		}
		r = br.postForm("/team", url.Values{"email": {"Ana@Example.com"}, "role": {"developer"}, "password": {password}})
		if r.status != http.StatusSeeOther {
			t.Fatalf("add: %d %s", r.status, r.body)
		}
		if r := br.postForm("/team", url.Values{"email": {"ana@example.com"}, "role": {"viewer"}, "password": {password}}); r.status != http.StatusUnprocessableEntity {
			t.Errorf("the same email twice: %d", r.status)
		}
		ana, err := b.s.App.Users.ByEmail(context.Background(), "ana@example.com")
		if err != nil || ana.Role != team.Developer || ana.MerchantID != b.s.MerchantID {
			t.Fatalf("added user: %+v %v", ana, err)
		}
		anaBrowser := b.login("ana@example.com")
		if r := br.postForm("/team/"+ana.ID+"/role", url.Values{"role": {"viewer"}}); r.status != http.StatusSeeOther {
			t.Fatalf("change role: %d", r.status)
		}
		if page := br.get("/team"); !strings.Contains(page.body, "The role was changed.") {
			t.Error("no flash after a role change")
		}
		// The role Ana has already changes nothing, and the page says so.
		if r := br.postForm("/team/"+ana.ID+"/role", url.Values{"role": {"viewer"}}); r.status != http.StatusSeeOther {
			t.Fatalf("the same role again: %d", r.status)
		}
		if page := br.get("/team"); !strings.Contains(page.body, "Nothing changed: the user had that role already.") || strings.Contains(page.body, "The role was changed.") {
			t.Error("the same role again is announced as a change")
		}
		// The new role applies to Ana's open session at once.
		if r := anaBrowser.postForm("/keys", nil); r.status != http.StatusForbidden {
			t.Errorf("demoted user creates a key: %d", r.status)
		}
		// The last owner cannot leave or be demoted.
		if r := br.postForm("/team/"+b.owner.ID+"/role", url.Values{"role": {"viewer"}}); r.status != http.StatusUnprocessableEntity {
			t.Errorf("demote the last owner: %d", r.status)
		}
		if r := br.postForm("/team/"+b.owner.ID+"/remove", nil); r.status != http.StatusUnprocessableEntity {
			t.Errorf("remove the last owner: %d", r.status)
		}
		if br.signedOut() {
			t.Error("a refused self-removal ended the session")
		}
	})
}

// TestTeamBounded: an owner adding a user to a full team gets the team
// page again, 422, saying why in the reader's language, with nothing
// stored; removing a user makes room.
func TestTeamBounded(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		var last *team.User
		for i := range team.MaxUsers - 1 { // the owner is one
			last = b.addUser(b.s.MerchantID, fmt.Sprintf("user%d@example.td", i), team.Viewer)
		}
		br := b.login(b.owner.Email)
		for _, c := range []struct{ lang, want string }{
			{"en", "No user was added: a team has at most " + strconv.Itoa(team.MaxUsers) + " users."},
			{"fr", "Aucun utilisateur ajouté\u00a0: une équipe compte au plus " + strconv.Itoa(team.MaxUsers) + " utilisateurs."},
		} {
			br.headers["Accept-Language"] = c.lang
			r := br.postForm("/team", url.Values{"email": {"late@example.td"}, "role": {"viewer"}, "password": {password}})
			if r.status != http.StatusUnprocessableEntity || !strings.Contains(html.UnescapeString(r.body), c.want) {
				t.Errorf("a user past the bound (%s): %d, want 422 saying %q:\n%s", c.lang, r.status, c.want, r.body)
			}
		}
		if _, err := b.s.App.Users.ByEmail(context.Background(), "late@example.td"); !errors.Is(err, team.ErrNotFound) {
			t.Fatalf("a refused user was stored: %v", err)
		}
		if r := br.postForm("/team/"+last.ID+"/remove", nil); r.status != http.StatusSeeOther {
			t.Fatalf("remove: %d", r.status)
		}
		if r := br.postForm("/team", url.Values{"email": {"late@example.td"}, "role": {"viewer"}, "password": {password}}); r.status != http.StatusSeeOther {
			t.Errorf("an add once a user was removed: %d %s", r.status, r.body)
		}
	})
}

func TestAuditLog(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		b.browser().postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"wrong password!"}`)
		br := b.login(b.owner.Email)
		br.postForm("/keys", nil)
		keyID := keyIDs(t, b, b.s.MerchantID)[0]
		br.postForm("/keys/"+keyID+"/revoke", nil)
		br.postForm("/team", url.Values{"email": {"ana@example.com"}, "role": {"viewer"}, "password": {password}})
		page := br.get("/audit")
		for _, action := range []string{team.ActionSignInFailed, team.ActionSignIn, team.ActionKeyCreated, team.ActionKeyRevoked, team.ActionUserAdded} {
			if !strings.Contains(page.body, action) {
				t.Errorf("the audit log lacks %s", action)
			}
		}
		if !strings.Contains(page.body, "127.0.0.1") || !strings.Contains(page.body, "ana@example.com (viewer)") {
			t.Error("the audit log lacks the address or the target")
		}
		// Append-only: the database itself refuses changes.
		if _, err := b.s.App.DB.ExecContext(context.Background(), `UPDATE audit_log SET action = 'nothing'`); err == nil {
			t.Error("audit_log accepted an UPDATE")
		}
		if _, err := b.s.App.DB.ExecContext(context.Background(), `DELETE FROM audit_log`); err == nil {
			t.Error("audit_log accepted a DELETE")
		}
		// Another merchant's owner sees none of it.
		otherID, _ := b.s.NewMerchant(t)
		others, _ := b.s.App.Users.List(context.Background(), otherID)
		if strings.Contains(b.login(others[0].Email).get("/audit").body, "ana@example.com") {
			t.Error("another merchant's audit log shows this one's entries")
		}
	})
}

// TestAuditLogsChangesOnly: a second revocation of a key, a role set to
// the role the user has, and enabling an enabled endpoint change nothing,
// and the audit log says nothing of them (each was logged again).
func TestAuditLogsChangesOnly(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		br := b.login(b.owner.Email)
		br.postForm("/keys", nil)
		keyID := keyIDs(t, b, b.s.MerchantID)[0]
		ana := b.addUser(b.s.MerchantID, "ana@example.com", team.Viewer)
		endpoint, err := b.s.App.Webhooks.CreateEndpoint(ctx, b.s.MerchantID, "http://127.0.0.1:9/hook")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			// A key revoked already is answered with the page saying so.
			if r := br.postForm("/keys/"+keyID+"/revoke", nil); r.status != []int{http.StatusSeeOther, http.StatusOK}[i] {
				t.Fatalf("revoke %d: %d", i+1, r.status)
			}
			for _, path := range []string{"/webhooks/" + endpoint.ID + "/disable", "/webhooks/" + endpoint.ID + "/enable"} {
				if r := br.postForm(path, nil); r.status != http.StatusSeeOther {
					t.Fatalf("%s: %d", path, r.status)
				}
			}
			if r := br.postForm("/team/"+ana.ID+"/role", url.Values{"role": {"viewer"}}); r.status != http.StatusSeeOther {
				t.Fatalf("role: %d", r.status)
			}
		}
		if r := br.postForm("/webhooks/"+endpoint.ID+"/enable", nil); r.status != http.StatusSeeOther { // enabled already
			t.Fatalf("enable: %d", r.status)
		}
		// The same role change sent 20 times at once is one change (each
		// used to log an entry: the handler compared with the role it had
		// read before the others wrote).
		var wg sync.WaitGroup
		for range 20 {
			tab := *br // a tab of the same browser: the session, its own flash cookies
			tab.others = maps.Clone(br.others)
			wg.Go(func() {
				if r := tab.postForm("/team/"+ana.ID+"/role", url.Values{"role": {"developer"}}); r.status != http.StatusSeeOther {
					t.Errorf("role at once: %d", r.status)
				}
			})
		}
		wg.Wait()
		want := map[string]int{team.ActionKeyRevoked: 1, team.ActionEndpointDisabled: 2, team.ActionEndpointEnabled: 2, team.ActionRoleChanged: 1}
		for action, n := range want {
			var got int
			if err := b.s.App.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_log WHERE merchant_id = $1 AND action = $2`, b.s.MerchantID, action).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != n {
				t.Errorf("%s: %d audit entries, want %d", action, got, n)
			}
		}
	})
}

// TestAuditBehindProxy: behind a listed reverse proxy, the audit log and
// the sign-in limit see the client X-Forwarded-For names, not the proxy
// (the tests' requests come from 127.0.0.1, listed here as the proxy).
func TestAuditBehindProxy(t *testing.T) {
	// The clock stands still, so no attempt comes back however slow the
	// machine is.
	clock := testserver.NewClock(time.Now())
	b := setup(t, testserver.Options{Now: clock.Now, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	flooder := b.browser()
	flooder.headers["X-Forwarded-For"] = "198.51.100.7"
	for range 31 {
		flooder.postJSON("/auth/login", `{"email":"nobody-`+strconv.Itoa(rand.IntN(1e9))+`@example.com","password":"wrong password!"}`)
	}
	if r := flooder.postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"`+password+`"}`); r.status != http.StatusTooManyRequests {
		t.Errorf("the flooding client: %d, want 429", r.status)
	}
	// An IPv6 host holds a whole /64: each of its addresses is the same
	// client, which gets no fresh budget from the next one.
	for i := range 30 {
		flooder.headers["X-Forwarded-For"] = fmt.Sprintf("2001:db8:5::%x", i+1)
		flooder.postJSON("/auth/login", `{"email":"nobody-`+strconv.Itoa(rand.IntN(1e9))+`@example.com","password":"wrong password!"}`)
	}
	flooder.headers["X-Forwarded-For"] = "2001:db8:5::ffff"
	if r := flooder.postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"`+password+`"}`); r.status != http.StatusTooManyRequests {
		t.Errorf("the flooding client's 31st IPv6 address in its /64: %d, want 429", r.status)
	}
	owner := b.browser()
	owner.headers["X-Forwarded-For"] = "203.0.113.9"
	if r := owner.postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"`+password+`"}`); r.status != http.StatusOK {
		t.Fatalf("another client behind the same proxy: %d, want 200", r.status)
	}
	owner.headers["X-Forwarded-For"] = "2001:db8:6::1"
	if r := owner.postJSON("/auth/login", `{"email":"`+b.owner.Email+`","password":"`+password+`"}`); r.status != http.StatusOK {
		t.Fatalf("a client of another /64: %d, want 200", r.status)
	}
	if page := owner.get("/audit"); !strings.Contains(page.body, "203.0.113.9") {
		t.Error("the audit log does not show the forwarded client address of the sign-in")
	}
}

// TestAuditLogPages follows the audit log's "Older" link from page to
// page: every entry shows once, newest first, and the last page has no
// link.
func TestAuditLogPages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.login(b.owner.Email)
		for i := range 60 { // 60 entries beside the sign-in: two pages of 50
			if i == 40 { // make room: a merchant has at most 50 active keys
				revokeAllKeys(t, b)
			}
			if r := br.postForm("/keys", nil); r.status != http.StatusCreated {
				t.Fatalf("create key: %d", r.status)
			}
		}
		older := regexp.MustCompile(`<a href="(/audit\?[^"]*)">`)
		path, pages, created := "/audit", 0, 0
		for path != "" && pages < 5 {
			page := br.get(path)
			if page.status != http.StatusOK {
				t.Fatalf("%s: %d", path, page.status)
			}
			pages++
			created += strings.Count(page.body, team.ActionKeyCreated)
			path = ""
			if m := older.FindStringSubmatch(page.body); m != nil {
				path = html.UnescapeString(m[1])
			}
		}
		if pages != 2 || created != 60 {
			t.Errorf("the Older links led through %d pages showing %d of the 60 keys created; want 2 pages, each key once", pages, created)
		}
	})
}

// revokeAllKeys revokes the merchant's keys through the store, which
// writes nothing in the audit log.
func revokeAllKeys(t *testing.T, b *bundle) {
	t.Helper()
	keys, err := b.s.App.APIKeys.List(context.Background(), b.s.MerchantID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := b.s.App.APIKeys.Revoke(context.Background(), b.s.MerchantID, k.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLanguages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		br := b.browser()
		br.headers["Accept-Language"] = "fr-FR,fr;q=0.9,en;q=0.5"
		if page := br.get("/login"); !strings.Contains(page.body, `<html lang="fr">`) || !strings.Contains(page.body, "Se connecter") {
			t.Error("the login page ignores Accept-Language")
		}
		br = b.login(b.owner.Email)
		if page := br.get("/"); !strings.Contains(page.body, `<html lang="en">`) || !strings.Contains(page.body, "Collected today") {
			t.Error("English by default")
		}
		// The switch returns to the page it was on, filters included.
		filtered := "/transactions?status=FAILED&operator=MOOV"
		back := regexp.MustCompile(`name="return" value="([^"]*)"`).FindStringSubmatch(br.get(filtered).body)
		if back == nil || html.UnescapeString(back[1]) != filtered {
			t.Fatalf("the language switch returns to %v, want %s", back, filtered)
		}
		r := br.postForm("/account/language", url.Values{"language": {"fr"}, "return": {html.UnescapeString(back[1])}})
		if r.status != http.StatusSeeOther || r.header.Get("Location") != filtered {
			t.Fatalf("switch: %d %s", r.status, r.header.Get("Location"))
		}
		// The browser remembers it too, for the pages without a session.
		if c := r.header.Values("Set-Cookie"); !slices.ContainsFunc(c, func(v string) bool { return strings.HasPrefix(v, "momopay_lang=fr;") }) {
			t.Errorf("the switch sets no language cookie: %q", c)
		}
		// A page answering a form has a POST-only address: its switch
		// returns to the page the form was sent from.
		br.headers["Referer"] = b.s.URL + "/account?tab=1"
		r = br.postForm("/account/password", url.Values{"current": {"not my password"}, "new": {"a brand new password"}})
		delete(br.headers, "Referer")
		if back := regexp.MustCompile(`name="return" value="([^"]*)"`).FindStringSubmatch(r.body); r.status != http.StatusUnprocessableEntity || back == nil || html.UnescapeString(back[1]) != "/account?tab=1" {
			t.Errorf("after a refused form (%d), the switch returns to %v, want /account?tab=1", r.status, back)
		}
		r = br.postForm("/account/password", url.Values{"current": {"not my password"}, "new": {"a brand new password"}})
		if back := regexp.MustCompile(`name="return" value="([^"]*)"`).FindStringSubmatch(r.body); back == nil || back[1] != "/" {
			t.Errorf("without a Referer, the switch returns to %v, want /", back)
		}
		// The 405 page is in the user's language, with the menu.
		br.headers["Accept-Language"], br.headers["Accept"] = "en", "text/html"
		if r := br.get("/auth/login"); r.status != http.StatusMethodNotAllowed || !strings.Contains(r.body, `<html lang="fr">`) || !strings.Contains(r.body, `<nav class="side"`) {
			t.Errorf("405 page: %d, French %v, menu %v", r.status, strings.Contains(r.body, `<html lang="fr">`), strings.Contains(r.body, `<nav class="side"`))
		}
		// Remembered for the user, in another browser too, whatever it asks.
		other := b.login(b.owner.Email)
		other.headers["Accept-Language"] = "en"
		if page := other.get("/"); !strings.Contains(page.body, `<html lang="fr">`) || !strings.Contains(page.body, "Encaissé aujourd&#39;hui") {
			t.Error("the chosen language is not remembered")
		} else if !strings.Contains(page.body, "Aucun paiement") || strings.Contains(page.body, "0 paiements") {
			t.Error(`a day without payments is not said as French says it ("aucun paiement")`)
		}
		// A form without the field (a text/plain body reads as one) is
		// refused, not taken for "follow the browser".
		if r := br.postForm("/account/language", url.Values{"return": {"/"}}); r.status != http.StatusBadRequest {
			t.Errorf("the language form without its field: %d, want 400", r.status)
		}
		// A language the page does not offer is refused too.
		if r := br.postForm("/account/language", url.Values{"language": {"de"}, "return": {"/"}}); r.status != http.StatusBadRequest {
			t.Errorf("the language form with de: %d, want 400", r.status)
		}
		if page := other.get("/"); !strings.Contains(page.body, `<html lang="fr">`) {
			t.Error("a language form without its field, or with one not offered, reset the language")
		}
		for _, away := range []string{"//evil.example/", "/\t/evil.example/", "/\n/evil.example/", "/\\evil.example/", "/\\/evil.example/", "https://evil.example/"} {
			if r := br.postForm("/account/language", url.Values{"language": {"fr"}, "return": {away}}); r.header.Get("Location") != "/account" {
				t.Errorf("open redirect: return %q led to %q", away, r.header.Get("Location"))
			}
		}
	})
}

// TestOverviewFigures: the totals follow inserts and settlements, by
// N'Djamena day, and the page shows them as merchants read them.
func TestOverviewFigures(t *testing.T) {
	// 23:30 UTC is 00:30 the next day in N'Djamena.
	clock := testserver.NewClock(time.Date(2026, 3, 10, 23, 30, 0, 0, time.UTC))
	for _, engine := range testserver.Engines {
		t.Run(engine, func(t *testing.T) {
			b := setup(t, testserver.Options{DB: engine, Now: clock.Now})
			ctx := context.Background()
			pay := func(ref string, amount int64, op payment.Operator, to payment.Status) string {
				t.Helper()
				tx, err := b.s.App.Payments.Initiate(ctx, b.s.MerchantID, payment.CreateRequest{Reference: ref, Amount: amount,
					Currency: "XAF", Operator: string(op), PhoneNumber: "+23560000003"})
				if err != nil {
					t.Fatalf("initiate %s: %v", ref, err)
				}
				if to != payment.StatusPending {
					if _, _, err := b.s.App.Payments.Settle(ctx, b.s.MerchantID, tx.ID, to, "test", ""); err != nil {
						t.Fatal(err)
					}
				}
				return tx.ID
			}
			refund := func(id string, to payment.RefundStatus) {
				t.Helper()
				r := &payment.Refund{ID: uuid.NewString(), MerchantID: b.s.MerchantID, TransactionID: id, Amount: 1500,
					RequestedBy: "test", Status: payment.RefundRequested, RequestedAt: clock.Now()}
				if err := b.s.App.Refunds.StartRefund(ctx, r); err != nil {
					t.Fatal(err)
				}
				r.Status, r.AnsweredAt = to, clock.Now()
				if err := b.s.App.Refunds.FinishRefund(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			refund(pay("today-1", 1500, payment.OperatorAirtel, payment.StatusSuccess), payment.RefundRefunded)
			refund(pay("today-2", 250000, payment.OperatorMoov, payment.StatusSuccess), payment.RefundRefused)
			pay("today-3", 700, payment.OperatorMoov, payment.StatusFailed)
			pay("today-4", 900, payment.OperatorAirtel, payment.StatusPending)
			for _, ref := range []string{"today-5", "today-6", "today-7"} {
				pay(ref, 800, payment.OperatorMoov, payment.StatusFailed)
			}
			clock.Advance(-2 * time.Hour) // 22:30 UTC, 23:30 the day before in N'Djamena
			pay("yesterday", 10000, payment.OperatorAirtel, payment.StatusSuccess)
			clock.Advance(2 * time.Hour)

			br := b.login(b.owner.Email)
			page := br.get("/").body
			for _, want := range []string{
				// Collected, less the one refund REFUNDED (a REFUSED one
				// gave nothing back): today 1 500 + 250 000 - 1 500.
				`<span class="amount">250 000 FCFA</span></p><p class="muted">2 payments, less 1 500 FCFA refunded</p>`,
				`<span class="amount">260 000 FCFA</span></p><p class="muted">3 payments, less 1 500 FCFA refunded</p>`, // with yesterday's 10 000
				"43 %", // 3 of 7 final payments succeeded: 42.9 %, rounded
				// The chart's name carries its figures, for screen readers.
				`aria-label="Collected per day, last 7 days: 05/03 0 FCFA, `,
				`10/03 10 000 FCFA, 11/03 250 000 FCFA"`,
				`title="2026-03-10 23:30:00 UTC">11/03/2026 00:30</time>`,
				"today-4",
				// SUCCESS: 2 today, 3 over the week; AIRTEL: 2 today, 3 in all.
				`status-SUCCESS">Succeeded</span></th><td class="num" data-label="Today">2</td><td class="num" data-label="7 days">3</td>`,
				`AIRTEL</th><td class="num" data-label="Today">2</td><td class="num" data-label="7 days">3</td>`,
				// A bar's title names its day as the axis does.
				`<title>10/03 10 000 FCFA</title>`,
			} {
				if !strings.Contains(page, want) {
					t.Errorf("the overview lacks %q", want)
				}
			}
			// In French, the chart's name is written as French is, with a
			// no-break space before its colon.
			br.headers["Accept-Language"] = "fr"
			if fr := br.get("/").body; !strings.Contains(fr, "aria-label=\"Encaissé par jour, 7 derniers jours\u00a0: 05/03 0 FCFA, ") {
				t.Errorf("the French overview's chart is not named in French:\n%s", regexp.MustCompile(`<svg class="chart"[^>]*>`).FindString(fr))
			}
		})
	}
}

// TestFlashCookieIsSigned: the message after a form is the service's own.
// A flash cookie written by anyone else (a sibling subdomain, the network)
// shows nothing; before, its argument appeared in the page ("Your account
// is suspended. Call … deliveries queued for re-sending.").
func TestFlashCookieIsSigned(t *testing.T) {
	b := setup(t, testserver.Options{})
	br := b.login(b.owner.Email)
	b64 := base64.RawURLEncoding.EncodeToString
	forged := b64([]byte("wh.since.queued")) + "." + b64([]byte("Your account is suspended, call +235 66 00 00 00"))
	for name, value := range map[string]string{
		"unsigned":         forged,
		"signed by no one": forged + "." + b64(make([]byte, 32)),
		"no argument":      b64([]byte("keys.revoked")) + "." + b64([]byte("a forged argument")),
	} {
		br.others = map[string]string{"momopay_flash": value}
		page := br.get("/keys")
		if page.status != http.StatusOK || strings.Contains(page.body, `class="flash"`) || strings.Contains(page.body, "forged") || strings.Contains(page.body, "suspended") {
			t.Errorf("%s flash cookie: %d, shown: %v", name, page.status, strings.Contains(page.body, `class="flash"`))
		}
	}
	// The service's own still shows, once.
	br.others = nil
	br.postForm("/keys", nil)
	keyID := keyIDs(t, b, b.s.MerchantID)[0]
	if r := br.postForm("/keys/"+keyID+"/revoke", nil); r.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", r.status)
	}
	// A script's background read of a page (a pending payment's page
	// reading itself again, from another tab) neither shows nor takes it.
	br.headers = map[string]string{"Sec-Fetch-Dest": "empty"}
	if page := br.get("/keys"); strings.Contains(page.body, "The key was revoked.") {
		t.Error("a background read took the flash")
	}
	br.headers = map[string]string{"Sec-Fetch-Dest": "document"}
	if page := br.get("/keys"); !strings.Contains(page.body, "The key was revoked.") {
		t.Error("the service's own flash is not shown")
	}
	if page := br.get("/keys"); strings.Contains(page.body, "The key was revoked.") {
		t.Error("the flash is shown twice")
	}
}
