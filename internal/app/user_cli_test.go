package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testdb"
)

func TestUserCommands(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		db := migrated(t, engine)
		env := map[string]string{"MOMOPAY_DATABASE_URL": db}
		m := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "Shop", "--email", "owner@shop.td", "--password-stdin")
		merchant := m["id"].(string)

		u := cliJSON(t, env, "a developer's password\n", "user", "add", "--merchant", merchant, "--email", "Dev@Shop.td", "--role", "developer", "--password-stdin")
		if u["email"] != "dev@shop.td" || u["role"] != "developer" || u["merchant_id"] != merchant {
			t.Errorf("user add --json: %v", u)
		}
		list := cliJSON(t, env, "", "user", "list", "--merchant", merchant)
		users, _ := list["users"].([]any)
		if len(users) != 2 || users[0].(map[string]any)["role"] != "owner" || users[0].(map[string]any)["email"] != "owner@shop.td" {
			t.Errorf("user list --json: %v", list)
		}
		out, _, err := cliRun(t, env, "", "user", "list", "--merchant", merchant)
		if err != nil || !strings.Contains(out, "dev@shop.td") || !strings.Contains(out, "developer") {
			t.Errorf("user list: %v\n%s", err, out)
		}
		for _, c := range []struct {
			stdin string
			args  []string
			want  string
		}{
			{"a developer's password\n", []string{"--email", "dev@shop.td", "--role", "developer"}, "already exists"},
			{"a developer's password\n", []string{"--email", "x@shop.td", "--role", "admin"}, "role must be owner, developer or viewer"},
			{"short\n", []string{"--email", "x@shop.td", "--role", "viewer"}, "12 to 72"},
			{"qwertyuiop123\n", []string{"--email", "x@shop.td", "--role", "viewer"}, "password is too easy to guess"},
			{"x@shop.td1234\n", []string{"--email", "x@shop.td", "--role", "viewer"}, "password is too easy to guess"},
			{"", []string{"--email", "x@shop.td", "--role", "viewer"}, "no password on standard input"},
		} {
			_, _, err := cliRun(t, env, c.stdin, append([]string{"user", "add", "--merchant", merchant, "--password-stdin"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("user add %v: %v, want %q", c.args, err, c.want)
			}
		}

		// passwd and remove end the user's sessions at once.
		a := openApp(t, db)
		dev, err := a.Users.ByEmail(context.Background(), "dev@shop.td")
		if err != nil {
			t.Fatal(err)
		}
		session := func(password string) string {
			jti := strings.ToLower(time.Now().Format("150405.000000000"))
			now := time.Now()
			u, err := a.Users.CheckPassword(context.Background(), "dev@shop.td", password, false)
			if err != nil || u == nil {
				t.Fatalf("sign-in: %v %v", u, err)
			}
			if err := a.Sessions.Start(context.Background(), team.Session{JTI: jti, UserID: dev.ID, MerchantID: merchant,
				CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}, u.Credential); err != nil {
				t.Fatal(err)
			}
			return jti
		}
		alive := func(jti string) bool {
			_, _, err := a.Sessions.Active(context.Background(), jti, time.Now(), time.Now().Add(-time.Hour))
			return err == nil
		}
		jti := session("a developer's password")
		if _, _, err := cliRun(t, env, "dev@shop.td2026\n", "user", "passwd", "--merchant", merchant, "dev@shop.td", "--password-stdin"); err == nil || !strings.Contains(err.Error(), "password is too easy to guess") {
			t.Errorf("user passwd to a password made of the email: %v", err)
		}
		if r := cliJSON(t, env, "a new developer password\n", "user", "passwd", "--merchant", merchant, "dev@shop.td", "--password-stdin"); r["status"] != "password_changed" {
			t.Errorf("user passwd --json: %v", r)
		}
		if alive(jti) {
			t.Error("a session survived user passwd")
		}
		if u, _ := a.Users.CheckPassword(context.Background(), "dev@shop.td", "a new developer password", false); u == nil {
			t.Error("the new password does not sign in")
		}
		jti = session("a new developer password")
		if r := cliJSON(t, env, "", "user", "remove", "--merchant", merchant, "dev@shop.td"); r["status"] != "removed" {
			t.Errorf("user remove --json: %v", r)
		}
		if alive(jti) {
			t.Error("a session survived user remove")
		}
		_, _, err = cliRun(t, env, "", "user", "remove", "--merchant", merchant, "owner@shop.td")
		if err == nil || !strings.Contains(err.Error(), "at least one owner") {
			t.Errorf("removing the last owner: %v", err)
		}
		_, _, err = cliRun(t, env, "", "user", "remove", "--merchant", merchant, "nobody@shop.td")
		if err == nil || !strings.Contains(err.Error(), "has no user") {
			t.Errorf("removing an unknown user: %v", err)
		}
	})
}

// openApp opens the app on db, idle, for the test to read the stores.
func openApp(t *testing.T, db string) *app.App {
	t.Helper()
	a, err := app.Open(context.Background(), app.Config{DatabaseURL: db, ExistingDatabase: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}
