package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/testdb"
)

type configReport struct {
	Settings []struct {
		Flag, Env, Source, Value string
	}
	Problems []string
	OK       bool
}

// anyPorts keeps a check that counts problems from depending on whether
// something on this machine listens on serve's default ports.
var anyPorts = []string{"--addr", "127.0.0.1:0", "--admin-addr", "off"}

func configCheck(t *testing.T, env map[string]string, args ...string) (configReport, string, error) {
	t.Helper()
	out, _, err := cliRun(t, env, "", append([]string{"config", "check", "--json"}, args...)...)
	var r configReport
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil {
		t.Fatalf("config check --json: not one JSON object (%v):\n%s", jerr, out)
	}
	return r, out, err
}

// TestConfigCheckSourcesAndSecrets: config check shows serve's effective
// settings, where each came from, and no password.
func TestConfigCheckSourcesAndSecrets(t *testing.T) {
	t.Parallel()
	db := testdb.URL(t, "postgres")
	withPassword := strings.Replace(db, "postgres://postgres@", "postgres://postgres:hunter2-secret@", 1)
	if withPassword == db {
		t.Skipf("test database URL %s has no user part to add a password to", db)
	}
	env := map[string]string{
		"MOMOPAY_DATABASE_URL": withPassword,
		"MOMOPAY_RATE_BURST":   "7",
		"MOMOPAY_RATE_LIMIT":   "3", // the flag below wins
		"MOMOPAY_REDIS_URL":    "redis://:redis-pass-secret@127.0.0.1:6379/0",
	}
	r, out, err := configCheck(t, env, "--rate-limit", "2.5", "--mode", "sandbox")
	if strings.Contains(out, "hunter2") || strings.Contains(out, "redis-pass") {
		t.Errorf("config check printed a password:\n%s", out)
	}
	want := map[string][2]string{ // flag: source, value
		"addr":           {"default", "127.0.0.1:8080"},
		"mode":           {"flag", "sandbox"},
		"rate-limit":     {"flag", "2.5"},
		"rate-burst":     {"env", "7"},
		"shutdown-grace": {"default", "25s"},
		"db":             {"env", strings.Replace(withPassword, "hunter2-secret", "xxxxx", 1)},
		"redis-url":      {"env", "redis://:xxxxx@127.0.0.1:6379/0"},
	}
	seen := map[string]bool{}
	for _, s := range r.Settings {
		seen[s.Flag] = true
		if w, ok := want[s.Flag]; ok && (s.Source != w[0] || s.Value != w[1]) {
			t.Errorf("--%s: %s %q, want %s %q", s.Flag, s.Source, s.Value, w[0], w[1])
		}
		if !strings.HasPrefix(s.Env, "MOMOPAY_") {
			t.Errorf("--%s has no variable: %q", s.Flag, s.Env)
		}
	}
	for f := range want {
		if !seen[f] {
			t.Errorf("--%s missing from config check", f)
		}
	}
	// The database is reachable; Redis at 127.0.0.1:6379 with a password
	// it does not require may answer or not: only the database matters here.
	for _, p := range r.Problems {
		if strings.Contains(p, "--db") {
			t.Errorf("reachable database reported: %s", p)
		}
	}
	if (err == nil) != r.OK || (err == nil) != (len(r.Problems) == 0) {
		t.Errorf("exit %v with ok=%v and problems %v", err, r.OK, r.Problems)
	}
}

// TestConfigCheckNamesEveryProblem: one run names every problem, not the
// first, and fails; a good configuration passes and creates nothing.
func TestConfigCheckNamesEveryProblem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"MOMOPAY_SHUTDOWN_GRACE": "forever", "MOMOPAY_REDIS_URL": "redis://127.0.0.1:1"}
	r, _, err := configCheck(t, env,
		"--mode", "prod", "--pending-ttl", "1h", "--rate-limit", "-2", "--addr", "localhost", "--admin-addr", "off",
		"--db", "mysql://root@127.0.0.1/momopay", "--trusted-proxies", "10.0.0.5, proxy.internal")
	want := []string{
		`MOMOPAY_SHUTDOWN_GRACE="forever" is not a valid value for --shutdown-grace`,
		`--mode "prod" is not a mode`,
		`--addr "localhost" is not a listen address`,
		"--pending-ttl 1h0m0s is out of range",
		"--rate-limit -2 is out of range",
		`unsupported database URL scheme "mysql"`,
		"--redis-url: Redis at redis://127.0.0.1:1 does not answer",
		`--trusted-proxies: "proxy.internal" is neither an address nor a prefix`,
	}
	all := strings.Join(r.Problems, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("problems lack %q:\n%s", w, all)
		}
	}
	if err == nil || r.OK || !strings.Contains(err.Error(), "8 problems") {
		t.Errorf("config check with 8 problems: err %v, ok %v, %d problems", err, r.OK, len(r.Problems))
	}
	// The variable that did not parse is shown as such beside the
	// default that holds.
	for _, s := range r.Settings {
		if s.Flag == "shutdown-grace" && (s.Source != "default (env invalid)" || s.Value != "25s") {
			t.Errorf("--shutdown-grace with a bad variable: %s %q, want default (env invalid) \"25s\"", s.Source, s.Value)
		}
	}
	// On stderr (main prints the error), a line for each, for logs.
	if err != nil {
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != 1+len(r.Problems) {
			t.Errorf("config check's error has %d lines for %d problems:\n%v", len(lines), len(r.Problems), err)
		}
		for i, p := range r.Problems {
			if i+1 < len(lines) && lines[i+1] != "config check: "+p {
				t.Errorf("line %d of the error: %q, want the problem %q", i+1, lines[i+1], p)
			}
		}
	}

	// A driver's error over several lines (pgx lists each address it
	// tried) is still one line a problem.
	r, _, err = configCheck(t, nil, "--db", "postgres://nobody@127.0.0.1:1,127.0.0.1:2/none?connect_timeout=2")
	if err == nil || len(r.Problems) == 0 || strings.Count(err.Error(), "\n") != len(r.Problems) {
		t.Errorf("an unreachable PostgreSQL: %v (problems %q)", err, r.Problems)
	}
	for _, p := range r.Problems {
		if strings.ContainsAny(p, "\n\t") {
			t.Errorf("a problem over several lines: %q", p)
		}
	}

	// Every bad flag on the command line, not the first alone; one that
	// did not parse is not also read as its zero value.
	r, _, _ = configCheck(t, nil, append(anyPorts, "--rate-limit", "lots", "--foo", "--shutdown-grace", "x", "---bad", "--db", filepath.Join(dir, "f.db"))...)
	wantFlags := []string{
		`command line: invalid value "lots" for flag -rate-limit: parse error`,
		"command line: flag provided but not defined: -foo",
		`command line: invalid value "x" for flag -shutdown-grace: parse error`,
		"command line: bad flag syntax: ---bad",
	}
	if !slices.Equal(r.Problems, wantFlags) {
		t.Errorf("config check with four bad flags: %q, want %q", r.Problems, wantFlags)
	}

	// Live mode says what it lacks, each lack a problem of its own.
	r, _, _ = configCheck(t, nil, append(anyPorts, "--mode", "live", "--db", filepath.Join(dir, "live.db"))...)
	if len(r.Problems) != 2 || !strings.HasPrefix(r.Problems[0], "--mode live: live mode needs MOMOPAY_SESSION_SECRET") ||
		!strings.HasPrefix(r.Problems[1], "--mode live: live mode needs at least one operator") {
		t.Errorf("live mode: %q", r.Problems)
	}
	// An Airtel URL refused and a Moov half given: both at once, the
	// second not held back until the first is mended.
	r, _, _ = configCheck(t, map[string]string{"MOMOPAY_SESSION_SECRET": "short",
		"MOMOPAY_AIRTEL_BASE_URL": "http://openapiuat.airtel.africa", "MOMOPAY_AIRTEL_CLIENT_ID": "id", "MOMOPAY_AIRTEL_CLIENT_SECRET": "secret",
		"MOMOPAY_MOOV_URL": "https://moov.example/MerchantService", "MOMOPAY_MOOV_PASSWORD": "pw"},
		append(anyPorts, "--mode", "live", "--db", filepath.Join(dir, "live.db"))...)
	if len(r.Problems) != 3 || !strings.Contains(r.Problems[0], "MOMOPAY_SESSION_SECRET") ||
		!strings.Contains(r.Problems[1], "MOMOPAY_AIRTEL_BASE_URL") || !strings.Contains(r.Problems[1], "is not an https URL") ||
		!strings.Contains(r.Problems[2], "MOMOPAY_MOOV_USERNAME") || !strings.Contains(r.Problems[2], "MOMOPAY_MOOV_KEY") {
		t.Errorf("live mode with three lacks: %q", r.Problems)
	}

	// Unreachable PostgreSQL; a SQLite file in a folder that is not there.
	r, _, _ = configCheck(t, nil, append(anyPorts, "--db", "postgres://postgres@127.0.0.1:1/momopay?connect_timeout=2")...)
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "connect to PostgreSQL at postgres://postgres@127.0.0.1:1/momopay") {
		t.Errorf("unreachable PostgreSQL: %v", r.Problems)
	}
	r, _, _ = configCheck(t, nil, append(anyPorts, "--db", filepath.Join(dir, "no-such-folder", "m.db"))...)
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "no-such-folder does not exist") {
		t.Errorf("SQLite in a missing folder: %v", r.Problems)
	}

	// Good: a SQLite file serve would create, and no Redis.
	good := filepath.Join(dir, "fresh.db")
	out, _, err := cliRun(t, nil, "", append([]string{"config", "check", "--db", good}, anyPorts...)...)
	if err != nil || !strings.Contains(out, "no problems") || !regexp.MustCompile(`--db\s+MOMOPAY_DATABASE_URL\s+flag\s+`+regexp.QuoteMeta(good)).MatchString(out) {
		t.Errorf("config check of a good configuration: %v\n%s", err, out)
	}
	if _, err := os.Stat(good); !os.IsNotExist(err) {
		t.Errorf("config check created the database: %v", err)
	}
}

// flagLine is a flag in a command's -h output, with its variable.
var flagLine = regexp.MustCompile(`(?m)^  -(\S+).*\n\s+.*\(env (MOMOPAY_[A-Z0-9_]+)\)`)

// TestEveryFlagHasAVariable: every flag of every command has an environment
// variable that works, and docs/configuration.md lists each flag with it.
func TestEveryFlagHasAVariable(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	top, _, _ := cliRun(t, nil, "", "help")
	checked := 0
	for _, l := range syntaxLine.FindAllStringSubmatch(top, -1) {
		var name []string
		for _, w := range strings.Fields(l[1]) {
			if strings.ToLower(w) != w || strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
				break
			}
			name = append(name, w)
		}
		if name[0] == "help" {
			continue
		}
		out, _, _ := cliRun(t, nil, "", append(name, "-h")...)
		flags := strings.Count(out, "\n  -")
		found := flagLine.FindAllStringSubmatch(out, -1)
		if len(found) != flags {
			t.Errorf("momopay %s -h: %d flags, %d with a variable:\n%s", strings.Join(name, " "), flags, len(found), out)
		}
		for _, f := range found {
			checked++
			row := regexp.MustCompile("(?m)^\\| `--" + regexp.QuoteMeta(f[1]) + "` \\| `" + f[2] + "` \\|")
			if !row.Match(doc) {
				t.Errorf("docs/configuration.md has no row for --%s (%s), of momopay %s", f[1], f[2], strings.Join(name, " "))
			}
		}
	}
	if checked < 30 {
		t.Errorf("only %d flags checked", checked)
	}

	// The variables work, on commands other than serve too.
	dir := t.TempDir()
	db := filepath.Join(dir, "env.db")
	env := map[string]string{"MOMOPAY_DATABASE_URL": db, "MOMOPAY_JSON": "true"}
	if _, _, err := cliRun(t, env, "", "migrate"); err != nil {
		t.Fatal(err)
	}
	env["MOMOPAY_MERCHANT_NAME"], env["MOMOPAY_MERCHANT_EMAIL"], env["MOMOPAY_PASSWORD_STDIN"] = "Env Shop", "env@example.td", "1"
	out, _, err := cliRun(t, env, "a long enough password\n", "merchant", "create")
	var m map[string]string
	if err != nil || json.Unmarshal([]byte(out), &m) != nil || m["name"] != "Env Shop" {
		t.Fatalf("merchant create from variables: %v %s", err, out)
	}
	env["MOMOPAY_MERCHANT"], env["MOMOPAY_WEBHOOK_URL"] = m["id"], "http://127.0.0.1:9/hook"
	if out, _, err := cliRun(t, env, "", "webhook", "create"); err != nil || !strings.Contains(out, `"url": "http://127.0.0.1:9/hook"`) {
		t.Errorf("webhook create from variables: %v %s", err, out)
	}
	env["MOMOPAY_JSON"] = "false"
	if out, _, err := cliRun(t, env, "", "apikey", "list"); err != nil || strings.HasPrefix(out, "{") {
		t.Errorf("MOMOPAY_JSON=false: %v %s", err, out)
	}
}

// TestConfigCheckHidesPasswordsOfBadURLs: a Redis URL that does not parse
// and a PostgreSQL password given as a query parameter are shown as xxxxx
// by config check (its table, its JSON and its error) and by serve.
func TestConfigCheckHidesPasswordsOfBadURLs(t *testing.T) {
	t.Parallel()
	db := "postgres://u@127.0.0.1:1/db?connect_timeout=2&password=pgLEAK"
	for _, redisURL := range []string{"redis://:pwLEAK@127.0.0.1:abc/3", "redis://user:pwLEAK@[::1", "redis://:pw%zzLEAK@127.0.0.1:6379/0"} {
		for _, asJSON := range []string{"false", "true"} {
			env := map[string]string{"MOMOPAY_JSON": asJSON}
			out, errOut, err := cliRun(t, env, "", "config", "check", "--db", db, "--redis-url", redisURL)
			if err == nil || !strings.Contains(err.Error(), "is not a Redis URL") || !strings.Contains(err.Error(), "connect to PostgreSQL") {
				t.Errorf("config check --redis-url %s: %v", redisURL, err)
			}
			if leak := out + errOut + fmt.Sprint(err); strings.Contains(leak, "LEAK") {
				t.Errorf("config check --redis-url %s (json %s) printed a password:\n%s", redisURL, asJSON, leak)
			}
		}
		_, _, err := cliRun(t, nil, "", "serve", "--db", filepath.Join(t.TempDir(), "m.db"), "--redis-url", redisURL)
		if err == nil || strings.Contains(err.Error(), "LEAK") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("serve --redis-url %s: %v", redisURL, err)
		}
	}
}

// TestConfigCheckRefusesWhatItWouldIgnore: a stray argument and a
// MOMOPAY_JSON that does not parse stop config check, as they stop the
// other commands, rather than being ignored.
func TestConfigCheckRefusesWhatItWouldIgnore(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "m.db")
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"extra-arg"}, "config check takes no arguments, got one argument (extra-arg)"},
		{nil, []string{"--rate-limit", "9", "extra-arg"}, "config check takes no arguments"},
		{map[string]string{"MOMOPAY_JSON": "maybe"}, nil, `MOMOPAY_JSON="maybe" is not a valid value for --json`},
		{nil, []string{"--json=maybe"}, `--json="maybe" is not a valid value for --json`},
	} {
		out, _, err := cliRun(t, c.env, "", append([]string{"config", "check", "--db", db}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config check %v %v: %v, want %q\n%s", c.env, c.args, err, c.want, out)
		}
	}
	// The flag wins over its variable, as for every flag.
	r, _, err := configCheck(t, map[string]string{"MOMOPAY_JSON": "maybe"}, append(anyPorts, "--db", db)...)
	if err != nil || !r.OK {
		t.Errorf("--json with MOMOPAY_JSON=maybe: %v %v", err, r.Problems)
	}
	if out, _, err := cliRun(t, map[string]string{"MOMOPAY_JSON": "true"}, "", "config", "check", "--db", db, "--json=false"); err != nil || strings.HasPrefix(out, "{") {
		t.Errorf("--json=false: %v\n%s", err, out)
	}
}

// TestConfigCheckShowsTheLogFormat: --log-format left at its default shows
// the format serve would use (json, stderr not being a terminal here), as
// the other defaults are shown.
func TestConfigCheckShowsTheLogFormat(t *testing.T) {
	t.Parallel()
	r, _, _ := configCheck(t, nil, "--db", filepath.Join(t.TempDir(), "m.db"))
	for _, s := range r.Settings {
		if s.Flag == "log-format" && (s.Source != "default" || s.Value != "json") {
			t.Errorf("--log-format: %s %q, want default \"json\"", s.Source, s.Value)
		}
	}
	out, _, _ := cliRun(t, nil, "", "serve", "-h")
	if !strings.Contains(out, "MOMOPAY_LOG_FORMAT) (default \"json\")") {
		t.Errorf("serve -h does not show the default log format:\n%s", out)
	}
}
