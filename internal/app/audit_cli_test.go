package app_test

import (
	"os"
	"os/user"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testdb"
)

// auditEntries returns the merchant's audit log, oldest first.
func auditEntries(t *testing.T, db, merchant string) []team.AuditEntry {
	t.Helper()
	a := openApp(t, db)
	entries, err := a.AuditLog.List(t.Context(), merchant, time.Time{}, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(entries)
	return entries
}

// TestCommandLineChangesAreAudited: what the service's operators change in
// a merchant's account from the command line (users, API keys, webhook
// endpoints, the auto-refund setting) appears in that merchant's audit log,
// as the dashboard's own changes do, naming the operating-system user and
// host; a command that fails records nothing, nor one that sets what
// already was, and reading records nothing.
func TestCommandLineChangesAreAudited(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		db := migrated(t, engine)
		env := map[string]string{"MOMOPAY_DATABASE_URL": db, "USER": "amina"}
		merchant := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "Shop", "--email", "owner@shop.td", "--password-stdin")["id"].(string)
		other := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "Other", "--email", "owner@other.td", "--password-stdin")["id"].(string)

		m := []string{"--merchant", merchant}
		cliJSON(t, env, "a developer's password\n", append([]string{"user", "add", "--email", "dev@shop.td", "--role", "developer", "--password-stdin"}, m...)...)
		cliJSON(t, env, "a new developer password\n", append([]string{"user", "passwd", "dev@shop.td", "--password-stdin"}, m...)...)
		cliJSON(t, env, "", append([]string{"user", "remove", "dev@shop.td"}, m...)...)
		key := cliJSON(t, env, "", append([]string{"apikey", "create"}, m...)...)
		cliJSON(t, env, "", append([]string{"apikey", "revoke", key["id"].(string)}, m...)...)
		hook := cliJSON(t, env, "", append([]string{"webhook", "create", "--url", "http://127.0.0.1:9/hooks"}, m...)...)
		// Switches to what already is change nothing and record nothing.
		for _, verb := range []string{"enable", "disable", "disable", "enable", "delete"} {
			cliJSON(t, env, "", append([]string{"webhook", verb, hook["id"].(string)}, m...)...)
		}
		for _, policy := range []string{"off", "on", "on", "off"} {
			cliJSON(t, env, "", append([]string{"merchant", "auto-refund", policy}, m...)...)
		}
		// Failures and reads record nothing.
		if _, _, err := cliRun(t, env, "", append([]string{"apikey", "revoke", key["id"].(string) + "0"}, m...)...); err == nil {
			t.Error("revoking an unknown key succeeded")
		}
		if _, _, err := cliRun(t, env, "", "apikey", "revoke", key["id"].(string), "--merchant", other); err == nil {
			t.Error("revoking another merchant's key succeeded")
		}
		cliJSON(t, env, "", append([]string{"user", "list"}, m...)...)
		cliJSON(t, env, "", append([]string{"apikey", "list"}, m...)...)

		keyPrefix := key["key"].(string)[:len(store.APIKeyPrefix)+6]
		hookTarget := "http://127.0.0.1:9/hooks (" + hook["id"].(string) + ")"
		want := []struct{ action, target string }{
			{team.ActionUserAdded, "dev@shop.td (developer)"},
			{team.ActionPassword, "dev@shop.td"},
			{team.ActionUserRemoved, "dev@shop.td"},
			{team.ActionKeyCreated, team.KeyTarget(keyPrefix, key["id"].(string))},
			{team.ActionKeyRevoked, team.KeyTarget(keyPrefix, key["id"].(string))},
			{team.ActionEndpointAdded, hookTarget},
			{team.ActionEndpointDisabled, hookTarget},
			{team.ActionEndpointEnabled, hookTarget},
			{team.ActionEndpointDeleted, hookTarget},
			{team.ActionAutoRefundOn, "a SUCCESS reported after TIMEOUT"},
			{team.ActionAutoRefundOff, "a SUCCESS reported after TIMEOUT"},
		}
		got := auditEntries(t, db, merchant)
		if len(got) != len(want) {
			t.Fatalf("%d audit entries, want %d: %+v", len(got), len(want), got)
		}
		host, _ := os.Hostname()
		for i, w := range want {
			e := got[i]
			if e.Action != w.action || e.Target != w.target {
				t.Errorf("entry %d: %s %q, want %s %q", i, e.Action, e.Target, w.action, w.target)
			}
			if e.Email != "command line: amina@"+host || e.Address != "command line" || e.UserID != "" || e.MerchantID != merchant {
				t.Errorf("entry %d names who and where as %q, %q (user %q, merchant %s)", i, e.Email, e.Address, e.UserID, e.MerchantID)
			}
			if strings.Contains(e.Target, key["key"].(string)) {
				t.Errorf("entry %d holds the API key itself", i)
			}
		}
		if others := auditEntries(t, db, other); len(others) != 0 {
			t.Errorf("the other merchant's log has entries: %+v", others)
		}
	})
}

// TestCommandLineUserWithoutUSER: under cron, systemd or docker exec
// $USER is often unset; the audit log then names $LOGNAME, else the
// process's own account, never "unknown user".
func TestCommandLineUserWithoutUSER(t *testing.T) {
	db := migrated(t, "sqlite")
	host, _ := os.Hostname()
	me, err := user.Current()
	if err != nil {
		t.Skipf("this system cannot name the process's user: %v", err)
	}
	env := map[string]string{"MOMOPAY_DATABASE_URL": db}
	merchant := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "Shop", "--email", "owner@shop.td", "--password-stdin")["id"].(string)
	for _, c := range []struct{ logname, want string }{{"amina", "amina"}, {"", me.Username}} {
		env["LOGNAME"] = c.logname
		cliJSON(t, env, "", "apikey", "create", "--merchant", merchant)
		got := auditEntries(t, db, merchant)
		if e := got[len(got)-1]; e.Email != "command line: "+c.want+"@"+host {
			t.Errorf("LOGNAME %q: the entry names %q, want %q", c.logname, e.Email, "command line: "+c.want+"@"+host)
		}
	}
}
