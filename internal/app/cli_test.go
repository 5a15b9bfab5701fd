package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
)

// cliRun runs the command line in-process as main does and returns both
// output streams.
func cliRun(t *testing.T, env map[string]string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = app.Run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

// cliJSON runs a command that must succeed with --json and decodes the one
// JSON object it prints.
func cliJSON(t *testing.T, env map[string]string, stdin string, args ...string) map[string]any {
	t.Helper()
	out, _, err := cliRun(t, env, stdin, append(args, "--json")...)
	if err != nil {
		t.Fatalf("momopay %s --json: %v", strings.Join(args, " "), err)
	}
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("momopay %s --json: stdout is not a JSON object: %v\n%s", strings.Join(args, " "), err, out)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("momopay %s --json: more than one JSON value on stdout:\n%s", strings.Join(args, " "), out)
	}
	return v
}

// migrated returns the address of a fresh database of engine, set up by
// "momopay migrate".
func migrated(t *testing.T, engine string) string {
	t.Helper()
	db := testdb.URL(t, engine)
	if out, _, err := cliRun(t, nil, "", "migrate", "--db", db); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	return db
}

// syntaxLine is one "  momopay …" line of the top-level help.
var syntaxLine = regexp.MustCompile(`(?m)^  momopay (.+)$`)

// TestHelp: every way of asking for help prints to stdout, succeeds, opens
// no database, and shows full syntax, positional arguments included.
func TestHelp(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "never.db")
	env := map[string]string{"MOMOPAY_DATABASE_URL": dbPath}
	top, _, err := cliRun(t, env, "", "help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apikey revoke --merchant MERCHANT_ID KEY_ID", "sandbox confirm TRANSACTION_ID", "webhook resend --merchant MERCHANT_ID DELIVERY_ID", "serve [--addr HOST:PORT]", "--rate-limit N"} {
		if !strings.Contains(top, want) {
			t.Errorf("momopay help lacks %q:\n%s", want, top)
		}
	}
	forms := []struct {
		args []string
		want string
	}{
		{[]string{"help"}, top},
		{[]string{"--help"}, top},
		{[]string{"-h"}, top},
		{[]string{"-help"}, top},
		{[]string{"apikey", "-h"}, "momopay apikey revoke --merchant MERCHANT_ID KEY_ID"},
		{[]string{"apikey", "--help"}, "momopay apikey create --merchant MERCHANT_ID"},
		{[]string{"help", "sandbox"}, "momopay sandbox refuse TRANSACTION_ID"},
		{[]string{"apikey", "revoke", "-h"}, "usage: momopay apikey revoke --merchant MERCHANT_ID KEY_ID"},
		{[]string{"apikey", "revoke", "--help"}, "-merchant string"},
		{[]string{"apikey", "revoke", "KEY", "-h"}, "usage: momopay apikey revoke --merchant MERCHANT_ID KEY_ID"},
		{[]string{"help", "apikey", "revoke"}, "usage: momopay apikey revoke --merchant MERCHANT_ID KEY_ID"},
		{[]string{"serve", "-h"}, "MOMOPAY_RATE_BURST"},
		{[]string{"version", "--help"}, "usage: momopay version [--json]"},
	}
	for _, f := range forms {
		out, _, err := cliRun(t, env, "", f.args...)
		if err != nil || !strings.Contains(out, f.want) {
			t.Errorf("momopay %s: err %v, stdout lacks %q:\n%s", strings.Join(f.args, " "), err, f.want, out)
		}
	}
	// Every command's own help starts with its line of the top-level help.
	lines := syntaxLine.FindAllStringSubmatch(top, -1)
	if len(lines) < 15 {
		t.Fatalf("only %d usage lines in momopay help", len(lines))
	}
	for _, l := range lines {
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
		out, _, err := cliRun(t, env, "", append(name, "-h")...)
		if err != nil || !strings.HasPrefix(out, "usage: momopay "+l[1]+"\n") {
			t.Errorf("momopay %s -h: err %v, want the usage line %q first:\n%s", strings.Join(name, " "), err, l[1], out)
		}
		// Flags are listed for the command, environment variables included.
		if strings.Contains(l[1], "--db") && !strings.Contains(out, "MOMOPAY_DATABASE_URL") {
			t.Errorf("momopay %s -h does not name MOMOPAY_DATABASE_URL:\n%s", strings.Join(name, " "), out)
		}
	}
	if _, err := os.Stat(dbPath); !os.IsNotExist(err) {
		t.Errorf("help touched the database: %v", err)
	}
}

// TestJSONOutput: every command that offers --json prints exactly one JSON
// object on stdout, on both engines; serve does not offer it and says so.
func TestJSONOutput(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		db := testdb.URL(t, engine)
		env := map[string]string{"MOMOPAY_DATABASE_URL": db}
		if m := cliJSON(t, env, "", "migrate"); m["applied"].(float64) < 1 || m["database"] != engine {
			t.Errorf("migrate --json: %v", m)
		}
		m := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "Json", "--email", "json@example.td", "--password-stdin")
		merchant := m["id"].(string)
		cliJSON(t, env, "", "merchant", "list")
		key := cliJSON(t, env, "", "apikey", "create", "--merchant", merchant)
		cliJSON(t, env, "", "apikey", "list", "--merchant", merchant)
		if r := cliJSON(t, env, "", "apikey", "revoke", "--merchant", merchant, key["id"].(string)); r["id"] != key["id"] || r["status"] != "revoked" {
			t.Errorf("apikey revoke --json: %v", r)
		}
		ids := pendingPayments(t, db, merchant, 2)
		if r := cliJSON(t, env, "", "sandbox", "confirm", ids[0]); r["status"] != "SUCCESS" || r["changed"] != true {
			t.Errorf("sandbox confirm --json: %v", r)
		}
		if r := cliJSON(t, env, "", "sandbox", "refuse", ids[1]); r["status"] != "FAILED" || r["changed"] != true {
			t.Errorf("sandbox refuse --json: %v", r)
		}
		if r := cliJSON(t, env, "", "reconcile", "list"); r["count"] != 0.0 {
			t.Errorf("reconcile list --json: %v", r)
		}
		cliJSON(t, env, "", "webhook", "create", "--merchant", merchant, "--url", "http://127.0.0.1:9/hook")
		cliJSON(t, env, "", "webhook", "list", "--merchant", merchant)
		if r := cliJSON(t, env, "", "version"); r["version"] != app.Version {
			t.Errorf("version --json: %v", r)
		}
		_, _, err := cliRun(t, env, "", "serve", "--json")
		if err == nil || !strings.Contains(err.Error(), "serve does not offer --json") {
			t.Errorf("serve --json: %v", err)
		}
	})
}

// TestIdsInAnyCase: every id the command line takes, --merchant and the
// positional ones, is read in any case, as the API and the dashboard read
// them; the output names them as stored, in lower case.
func TestIdsInAnyCase(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		env := map[string]string{"MOMOPAY_DATABASE_URL": migrated(t, engine)}
		merchant := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "Case", "--email", "case@example.td", "--password-stdin")["id"].(string)
		M := strings.ToUpper(merchant)
		key := cliJSON(t, env, "", "apikey", "create", "--merchant", M)
		if keys, _ := cliJSON(t, env, "", "apikey", "list", "--merchant", merchant)["api_keys"].([]any); len(keys) != 1 {
			t.Errorf("the merchant's keys after apikey create --merchant %s: %v", M, keys)
		}
		if r := cliJSON(t, env, "", "apikey", "revoke", "--merchant", M, strings.ToUpper(key["id"].(string))); r["id"] != key["id"] || r["status"] != "revoked" {
			t.Errorf("apikey revoke of an upper-case id: %v", r)
		}
		ids := pendingPayments(t, env["MOMOPAY_DATABASE_URL"], merchant, 2)
		if r := cliJSON(t, env, "", "transaction", "show", strings.ToUpper(ids[0])); r["id"] != ids[0] {
			t.Errorf("transaction show of an upper-case id: %v", r)
		}
		if r := cliJSON(t, env, "", "sandbox", "confirm", strings.ToUpper(ids[0])); r["status"] != "SUCCESS" {
			t.Errorf("sandbox confirm of an upper-case id: %v", r)
		}
		if r := cliJSON(t, env, "", "sandbox", "refuse", strings.ToUpper(ids[1])); r["status"] != "FAILED" {
			t.Errorf("sandbox refuse of an upper-case id: %v", r)
		}
		if _, _, err := cliRun(t, env, "", "refund", strings.ToUpper(ids[1])); err == nil || strings.Contains(err.Error(), "no transaction") {
			t.Errorf("refund of a FAILED payment named in upper case: %v, want a refusal that found it", err)
		}
		endpoint := cliJSON(t, env, "", "webhook", "create", "--merchant", M, "--url", "http://127.0.0.1:9/Hook")
		if endpoint["url"] != "http://127.0.0.1:9/Hook" {
			t.Errorf("the URL's case was changed: %v", endpoint)
		}
		E := strings.ToUpper(endpoint["id"].(string))
		if r := cliJSON(t, env, "", "webhook", "disable", "--merchant", M, E); r["id"] != endpoint["id"] {
			t.Errorf("webhook disable of an upper-case id: %v", r)
		}
		if r := cliJSON(t, env, "", "webhook", "enable", "--merchant", M, E); r["id"] != endpoint["id"] {
			t.Errorf("webhook enable of an upper-case id: %v", r)
		}
		cliJSON(t, env, "", "reconcile", "list", "--merchant", M)
		cliJSON(t, env, "", "webhook", "prune", "--days", "1", "--dry-run", "--merchant", M)
		if r := cliJSON(t, env, "", "webhook", "delete", "--merchant", M, E); r["id"] != endpoint["id"] {
			t.Errorf("webhook delete of an upper-case id: %v", r)
		}
	})
}

// pendingPayments creates n payments that stay PENDING (a payer number the
// sandbox leaves unanswered).
func pendingPayments(t *testing.T, db, merchant string, n int) []string {
	t.Helper()
	a, err := app.Open(t.Context(), app.Config{DatabaseURL: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var ids []string
	for i := range n {
		tx, err := a.Payments.Initiate(t.Context(), merchant, payment.CreateRequest{
			Reference: "cli-" + string(rune('a'+i)), Amount: 1000, Currency: "XAF", Operator: "MOOV", PhoneNumber: "+23566000000",
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tx.ID)
	}
	return ids
}

// TestSandboxAnswerToSettledPayment: answering a payment that is already
// final changes nothing, and the command says whether it recorded a
// reconciliation case, which reconcile list then shows.
func TestSandboxAnswerToSettledPayment(t *testing.T) {
	t.Parallel()
	db := migrated(t, "sqlite")
	env := map[string]string{"MOMOPAY_DATABASE_URL": db}
	merchant := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "S", "--email", "s@example.td", "--password-stdin")["id"].(string)
	id := pendingPayments(t, db, merchant, 1)[0]
	steps := []struct {
		args  []string
		want  string
		cases float64
	}{
		{[]string{"sandbox", "confirm", id}, "is now SUCCESS", 0},
		{[]string{"sandbox", "confirm", id}, "was already SUCCESS; nothing changed and nothing was recorded", 0},
		{[]string{"sandbox", "refuse", id}, "was already SUCCESS and stays so; the contradicting answer FAILED was recorded as a reconciliation case", 1},
	}
	for _, s := range steps {
		out, _, err := cliRun(t, env, "", s.args...)
		if err != nil || !strings.Contains(out, s.want) {
			t.Errorf("momopay %s: %v, want %q in %q", strings.Join(s.args, " "), err, s.want, out)
		}
		if n := cliJSON(t, env, "", "reconcile", "list")["count"]; n != s.cases {
			t.Errorf("after momopay %s: %v reconciliation cases, want %v", strings.Join(s.args, " "), n, s.cases)
		}
	}
	if r := cliJSON(t, env, "", "sandbox", "refuse", id); r["changed"] != false || r["reconciliation_case"] != true || r["status"] != "SUCCESS" {
		t.Errorf("late refusal --json: %v", r)
	}
	// Its times are written as the API writes them, six fractional
	// digits each (TestPrintJSONTimes has the times that lose digits).
	for _, c := range cliJSON(t, env, "", "reconcile", "list")["cases"].([]any) {
		for k, v := range c.(map[string]any) {
			if s, ok := v.(string); ok && strings.HasSuffix(k, "_at") && !fixedTime.MatchString(s) {
				t.Errorf("reconcile list --json: %s %q is not in the API's time format", k, s)
			}
		}
	}
	// Resolved cases are told from open ones, and can be left out; so
	// can other merchants' cases.
	isRFC3339 := func(s string) bool { _, err := time.Parse(time.RFC3339, s); return err == nil }
	// row is the fields of the table's only case.
	row := func(out string) []string {
		if lines := strings.Split(out, "\n"); len(lines) > 2 {
			return strings.Fields(lines[1])
		}
		return nil
	}
	out, _, err := cliRun(t, env, "", "reconcile", "list")
	if f := row(out); err != nil || len(f) < 8 || f[1] != merchant || f[6] != "open" || !strings.HasSuffix(out, "1 case(s), 1 open\n") {
		t.Errorf("reconcile list with an open case: %v\n%s", err, out)
	}
	a := openApp(t, db)
	cases, err := a.Cases.ForMerchant(t.Context(), merchant, true)
	if err != nil || len(cases) != 1 {
		t.Fatalf("the open case: %+v %v", cases, err)
	}
	if _, err := a.Cases.Resolve(t.Context(), merchant, cases[0].ID, "ops@example.td", "checked with Airtel", time.Now()); err != nil {
		t.Fatal(err)
	}
	out, _, err = cliRun(t, env, "", "reconcile", "list")
	if f := row(out); err != nil || len(f) < 9 || !isRFC3339(f[6]) || f[7] != "by" || f[8] != "ops@example.td" || !strings.HasSuffix(out, "1 case(s), 0 open\n") {
		t.Errorf("reconcile list with the case resolved: %v\n%s", err, out)
	}
	if r := cliJSON(t, env, "", "reconcile", "list", "--open"); r["count"] != 0.0 || r["open"] != 0.0 {
		t.Errorf("reconcile list --open: %v, want no case", r)
	}
	other := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "T", "--email", "t@example.td", "--password-stdin")["id"].(string)
	if r := cliJSON(t, env, "", "reconcile", "list", "--merchant", other); r["count"] != 0.0 {
		t.Errorf("reconcile list --merchant (another merchant): %v, want no case", r)
	}
	if _, _, err := cliRun(t, env, "", "reconcile", "list", "--merchant", "01a201a5-ff55-7e2e-9bdb-ebdaee74e215"); err == nil || !strings.Contains(err.Error(), "no merchant") {
		t.Errorf("reconcile list --merchant (no such merchant): %v", err)
	}
	if r := cliJSON(t, env, "", "reconcile", "list", "--merchant", merchant); r["count"] != 1.0 || r["open"] != 0.0 {
		t.Errorf("reconcile list --merchant %s: %v, want its resolved case", merchant, r)
	}

	// Its warning is logged as serve logs: JSON on a stderr that is no
	// terminal, text when MOMOPAY_LOG_FORMAT says so.
	for format, want := range map[string]string{"": `{"time":`, "text": "time="} {
		env["MOMOPAY_LOG_FORMAT"] = format
		if _, stderr, _ := cliRun(t, env, "", "sandbox", "refuse", id); !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "WARN") {
			t.Errorf("MOMOPAY_LOG_FORMAT=%q: the late answer's warning reads %q, want it to start %q", format, stderr, want)
		}
	}
	delete(env, "MOMOPAY_LOG_FORMAT")
	if _, _, err := cliRun(t, env, "", "sandbox", "confirm", "5b0e8b8e-0000-4000-8000-000000000000"); err == nil || !strings.Contains(err.Error(), "no transaction") {
		t.Errorf("unknown transaction: %v", err)
	}
}

// TestOnlyServeAndMigrateCreate: every other command refuses a missing
// SQLite file, naming its path and the command that creates it, and
// leaves no file behind; an empty PostgreSQL database is refused too.
func TestOnlyServeAndMigrateCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	const someID = "5b0e8b8e-0000-4000-8000-000000000000"
	commands := [][]string{
		{"merchant", "list"},
		{"merchant", "create", "--name", "X", "--email", "x@example.td", "--password-stdin"},
		{"apikey", "create", "--merchant", someID},
		{"apikey", "list", "--merchant", someID},
		{"apikey", "revoke", "--merchant", someID, someID},
		{"sandbox", "confirm", someID},
		{"sandbox", "refuse", someID},
		{"reconcile", "list"},
		{"webhook", "list", "--merchant", someID},
	}
	for _, args := range commands {
		for _, db := range []string{missing, "sqlite:" + missing} {
			_, _, err := cliRun(t, nil, "correct horse battery\n", append(args, "--db", db)...)
			if err == nil || !strings.Contains(err.Error(), "no SQLite database at "+missing) || !strings.Contains(err.Error(), "momopay migrate") {
				t.Errorf("momopay %s --db %s: %v", strings.Join(args, " "), db, err)
			}
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a command created %s: %v", missing, err)
	}
	empty := testdb.URL(t, "postgres")
	if _, _, err := cliRun(t, nil, "", "merchant", "list", "--db", empty); err == nil || !strings.Contains(err.Error(), "has no momopay tables") {
		t.Errorf("merchant list on an empty PostgreSQL database: %v", err)
	}
	// migrate creates it, in a folder that exists; a missing folder is named.
	out, _, err := cliRun(t, nil, "", "migrate", "--db", missing)
	if err != nil || !strings.Contains(out, "created the sqlite database "+missing) {
		t.Errorf("migrate: %v %q", err, out)
	}
	noDir := filepath.Join(dir, "no", "such", "folder", "x.db")
	if _, _, err := cliRun(t, nil, "", "migrate", "--db", noDir); err == nil || !strings.Contains(err.Error(), "the folder "+filepath.Dir(noDir)+" does not exist") {
		t.Errorf("migrate into a missing folder: %v", err)
	}
}

// TestDatabaseAddresses: PostgreSQL in URL and key=value form is
// recognised as PostgreSQL, never taken as a SQLite file name; other
// schemes and unknown key=value strings are refused, naming the problem.
func TestDatabaseAddresses(t *testing.T) {
	t.Parallel()
	pgURL := testdb.URL(t, "postgres")
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	kv := "host=" + u.Hostname() + " port=" + u.Port() + " user=" + u.User.Username() + " dbname=" + strings.TrimPrefix(u.Path, "/") + " sslmode=disable"
	out, _, err := cliRun(t, nil, "", "migrate", "--db", kv)
	if err != nil || !strings.Contains(out, "to the postgres database") {
		t.Fatalf("migrate --db %q: %v %q", kv, err, out)
	}
	alt := *u
	alt.Scheme = "postgresql"
	out, _, err = cliRun(t, nil, "", "migrate", "--db", alt.String())
	if err != nil || !strings.Contains(out, "postgres database") || !strings.Contains(out, "already up to date") {
		t.Errorf("migrate --db %s: %v %q", alt.String(), err, out)
	}
	if r := cliJSON(t, map[string]string{"MOMOPAY_DATABASE_URL": kv}, "", "merchant", "list"); r["merchants"] == nil {
		t.Errorf("merchant list over a key=value DSN: %v", r)
	}
	refused := map[string]string{
		"foo=bar baz=1":          `"foo" is not a PostgreSQL parameter`,
		"mysql://root@localhost": `unsupported database URL scheme "mysql"`,
		"":                       "empty database address",
	}
	for db, want := range refused {
		if _, _, err := cliRun(t, nil, "", "migrate", "--db", db); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("migrate --db %q: %v, want %q", db, err, want)
		}
	}
	// A wrong password is not repeated in the message.
	bad := "host=" + u.Hostname() + " port=" + u.Port() + " user=nobody password=s3cret dbname=nope sslmode=disable connect_timeout=5"
	if _, _, err := cliRun(t, nil, "", "merchant", "list", "--db", bad); err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("merchant list on an unreachable database: %v", err)
	}
}

// TestMigrateSaysWhatItDid: migrate reports the migrations it applied, and
// "already up to date" only when it applied none.
func TestMigrateSaysWhatItDid(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		db := testdb.URL(t, engine)
		first, _, err := cliRun(t, nil, "", "migrate", "--db", db)
		if err != nil || !regexp.MustCompile(`applied [1-9][0-9]* migrations`).MatchString(first) || strings.Contains(first, "up to date") {
			t.Errorf("first migrate: %v %q", err, first)
		}
		again, _, err := cliRun(t, nil, "", "migrate", "--db", db)
		if err != nil || !strings.Contains(again, "already up to date") || strings.Contains(again, "applied") {
			t.Errorf("second migrate: %v %q", err, again)
		}
		if m := cliJSON(t, nil, "", "migrate", "--db", db); m["applied"] != 0.0 || m["version"].(float64) < 1 || m["created"] != false {
			t.Errorf("migrate --json: %v", m)
		}
	})
}

// TestServeRefusesBadSettings: out-of-range or malformed serve settings,
// by flag or environment variable, are refused before anything starts or
// a database is created, naming the setting.
func TestServeRefusesBadSettings(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "serve.db")
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--pending-ttl", "0"}, "--pending-ttl 0s is out of range"},
		{nil, []string{"--pending-ttl", "500ms"}, "--pending-ttl 500ms is out of range"},
		{nil, []string{"--pending-ttl", "6m"}, "--pending-ttl 6m0s is out of range"},
		{nil, []string{"--pending-ttl", "-1s"}, "--pending-ttl -1s is out of range"},
		{map[string]string{"MOMOPAY_PENDING_TTL": "0s"}, nil, "--pending-ttl 0s is out of range"},
		{map[string]string{"MOMOPAY_PENDING_TTL": "soon"}, nil, `MOMOPAY_PENDING_TTL="soon" is not a valid value for --pending-ttl`},
		{nil, []string{"--pending-ttl", "30s", "--mode", "live"}, "--pending-ttl (MOMOPAY_PENDING_TTL) is for sandbox mode only"},
		{nil, []string{"--mode", "prod"}, `--mode "prod" is not a mode`},
		{nil, []string{"--rate-limit", "-1"}, "--rate-limit -1 is out of range"},
		{nil, []string{"--rate-limit", "5", "--rate-burst", "0"}, "--rate-burst 0 is out of range"},
		{map[string]string{"MOMOPAY_RATE_LIMIT": "lots"}, nil, `MOMOPAY_RATE_LIMIT="lots" is not a valid value for --rate-limit`},
		{map[string]string{"MOMOPAY_RATE_BURST": "-3"}, nil, "--rate-burst -3 is out of range"},
		{nil, []string{"--rate-limit", "0", "--rate-burst", "-5"}, "--rate-burst -5 is out of range: give at least 1; 0 only goes with --rate-limit 0"},
		{nil, []string{"--rate-limit", "-1", "--rate-burst", "0"}, "--rate-limit -1 is out of range"},
		{nil, []string{"--rate-limit", "-1", "--rate-burst", "0"}, "--rate-burst 0 is out of range"},
		{nil, []string{"--addr", "127.0.0.1:99999"}, `--addr "127.0.0.1:99999" is not a listen address`},
		{nil, []string{"--addr", "8080"}, `--addr "8080" is not a listen address`},
		{nil, []string{"--admin-addr", "nope"}, `--admin-addr "nope" is not a listen address`},
		{map[string]string{"MOMOPAY_ADMIN_ADDR": "127.0.0.1:99999"}, nil, `--admin-addr "127.0.0.1:99999" is not a listen address`},
		// Two bad settings of the same kind, both named.
		{nil, []string{"--log-format", "xml", "--log-level", "loud"}, "--log-format"},
		{nil, []string{"--log-format", "xml", "--log-level", "loud"}, "--log-level"},
		{nil, []string{"--shutdown-grace", "0s"}, "--shutdown-grace 0s is out of range"},
		{map[string]string{"MOMOPAY_SHUTDOWN_GRACE": "11m"}, nil, "--shutdown-grace 11m0s is out of range"},
		{nil, []string{"--redis-url", "http://127.0.0.1:6379"}, "--redis-url http://127.0.0.1:6379 is not a Redis URL"},
		// Every problem at once, not the first alone.
		{map[string]string{"MOMOPAY_RATE_LIMIT": "lots", "MOMOPAY_PENDING_TTL": "soon"}, nil, `MOMOPAY_PENDING_TTL="soon" is not a valid value for --pending-ttl: parse error` + "\n" + `MOMOPAY_RATE_LIMIT="lots" is not a valid value for --rate-limit`},
		{nil, []string{"--mode", "prod", "--rate-burst", "-1"}, `--mode "prod" is not a mode: use sandbox or live (env MOMOPAY_MODE)` + "\nserve: " + "--rate-burst -1 is out of range"},
		{nil, []string{"extra"}, "serve takes no arguments"},
	}
	for _, c := range cases {
		_, _, err := cliRun(t, c.env, "", append([]string{"serve", "--db", db}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v %v: %v, want %q", c.env, c.args, err, c.want)
		}
		if err != nil && strings.HasPrefix(err.Error(), "momopay") {
			t.Errorf("serve %v: the error repeats main's prefix: %v", c.args, err)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused serve created the database: %v", err)
	}
}

// TestServeNamesBadVariablesWithOtherProblems: variables that do not parse
// are named together with the problems of the other settings, and a
// variable that did not parse does not count as given (MOMOPAY_PENDING_TTL
// is for sandbox mode only when it is set).
func TestServeNamesBadVariablesWithOtherProblems(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "serve.db")
	env := map[string]string{"MOMOPAY_RATE_LIMIT": "lots", "MOMOPAY_PENDING_TTL": "abc", "MOMOPAY_MODE": "prod"}
	_, _, err := cliRun(t, env, "", "serve", "--db", db)
	for _, want := range []string{`MOMOPAY_RATE_LIMIT="lots"`, `MOMOPAY_PENDING_TTL="abc"`, `--mode "prod" is not a mode`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve with three bad settings: %v, want %q named", err, want)
		}
	}
	env = map[string]string{"MOMOPAY_PENDING_TTL": "abc", "MOMOPAY_MODE": "live"}
	_, _, err = cliRun(t, env, "", "serve", "--db", db)
	if err == nil || !strings.Contains(err.Error(), `MOMOPAY_PENDING_TTL="abc"`) || strings.Contains(err.Error(), "for sandbox mode only") {
		t.Errorf("live mode with a MOMOPAY_PENDING_TTL that does not parse: %v", err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused serve created the database: %v", err)
	}
}

// fixedTime is the API's one time format: RFC 3339 UTC with six
// fractional digits.
var fixedTime = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$`)

// TestUnknownIdsAreClipped: a command told of an id it does not know says
// so with the start of the id, not the whole of whatever was passed (an
// id of 100,000 bytes came back whole).
func TestUnknownIdsAreClipped(t *testing.T) {
	t.Parallel()
	db := migrated(t, "sqlite")
	env := map[string]string{"MOMOPAY_DATABASE_URL": db}
	merchant := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "S", "--email", "s@example.td", "--password-stdin")["id"].(string)
	long := strings.Repeat("x", 100_000)
	for _, args := range [][]string{
		{"refund", long}, {"transaction", "show", long}, {"sandbox", "confirm", long},
		{"apikey", "revoke", "--merchant", merchant, long}, {"apikey", "list", "--merchant", long},
		{"user", "remove", "--merchant", merchant, long + "@example.td"},
		{"reconcile", "list", "--merchant", long},
		// Too many arguments: each is named by its start.
		{"refund", long, long}, {"webhook", "deliveries", "--merchant", merchant, long},
	} {
		_, _, err := cliRun(t, env, "", args...)
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "xxxxxxxx") {
			t.Errorf("momopay %s …: %d bytes of error, want a short one naming the id's start", args[0], len(errText(err)))
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
