package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testlog"
	"github.com/momopay/momopay/internal/testserver"
)

var binary string

func TestMain(m *testing.M) {
	// Every serve started here inherits these: an admin listener on a port
	// the kernel picks (the default 127.0.0.1:9090 would let only one of
	// the parallel servers start), and the text log the tests read.
	os.Setenv("MOMOPAY_ADMIN_ADDR", "127.0.0.1:0")
	os.Setenv("MOMOPAY_LOG_FORMAT", "text")
	dir, err := os.MkdirTemp("", "momopay-bin")
	if err != nil {
		panic(err)
	}
	// The fake operators of live mode serve https, as live mode requires.
	if err := testserver.TrustTLSServers(dir); err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "momopay")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build momopay: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// process is a momopay serve running as a real OS process.
type process struct {
	cmd            *exec.Cmd
	url            string
	stdout, stderr *testlog.Buffer
}

var listeningLine = regexp.MustCompile(`msg="momopay listening" url=(http://\S+)`)

// serve starts momopay on a port the kernel picks (--addr 127.0.0.1:0) and
// reads the address from its log, so parallel tests never race for a port.
func serve(t *testing.T, dbURL string, args ...string) *process {
	t.Helper()
	return start(t, exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dbURL}, args...)...))
}

// start runs a prepared serve command and waits until it answers.
func start(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{cmd: cmd, stdout: &testlog.Buffer{}, stderr: &testlog.Buffer{}}
	stderr := p.stderr
	cmd.Stdout, cmd.Stderr = p.stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 400 {
		if m := listeningLine.FindStringSubmatch(stderr.String()); m != nil {
			p.url = m[1]
			if resp, err := http.Get(p.url + "/healthz"); err == nil {
				resp.Body.Close()
				return p
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("momopay did not start:\n%s\n%s", p.stdout, stderr)
	return nil
}

var apiKeyLine = regexp.MustCompile(`API key:\s+(service_live_[A-Za-z0-9]{32})`)

func call(t *testing.T, method, url, key, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return out
}

// TestSurvivesSIGKILL kills the server while payments are PENDING, with
// callbacks in flight, and checks that after a restart every payment still
// reaches its right final state: polls and expiry checks are durable jobs.
func TestSurvivesSIGKILL(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		dbURL := testdb.URL(t, engine)
		first := serve(t, dbURL, "--pending-ttl", "4s")
		m := apiKeyLine.FindStringSubmatch(first.stdout.String())
		if m == nil {
			t.Fatalf("no API key printed on first start: %s", first.stdout)
		}
		key := m[1]
		want := map[string]string{
			"+23560000001": "SUCCESS", // its callback dies with the process; polling settles it
			"+23560000002": "FAILED",
			"+23560000003": "TIMEOUT",
			"+23560000004": "EXPIRED",
			"+23560000006": "SUCCESS",
		}
		ids := map[string]string{}
		for phone := range want {
			body := fmt.Sprintf(`{"reference":"kill-%s","amount":700,"currency":"XAF","operator":"AIRTEL","phone_number":"%s"}`, phone[1:], phone)
			r := call(t, "POST", first.url+"/v1/transactions", key, body)
			if r["status"] != "PENDING" {
				t.Fatalf("create: %v", r)
			}
			ids[phone] = r["id"].(string)
		}
		if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		first.cmd.Wait()

		second := serve(t, dbURL, "--pending-ttl", "4s")
		if strings.Contains(second.stdout.String(), "API key") {
			t.Errorf("a restart printed demo credentials again")
		}
		deadline := time.Now().Add(25 * time.Second)
		for phone, id := range ids {
			for {
				r := call(t, "GET", second.url+"/v1/transactions/"+id, key, "")
				if r["status"] == want[phone] {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %v after restart, want %s", phone, r["status"], want[phone])
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	})
}

// TestCommandLine runs the administration commands as an operator would.
func TestCommandLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "cli.db")
	run := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err != nil {
			return out.String() + errOut.String(), err
		}
		return out.String(), nil
	}
	decode := func(s string) map[string]any {
		var v map[string]any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("not one JSON object: %q", s)
		}
		return v
	}
	out, err := run("", "migrate", "--db", db)
	if err != nil || !strings.Contains(out, "created the sqlite database "+db+" and applied") {
		t.Fatalf("migrate: %v %s", err, out)
	}
	out, err = run("a long enough password\n", "merchant", "create", "--name", "Boutique", "--email", "Shop@Example.td", "--password-stdin", "--json", "--db", db)
	if err != nil {
		t.Fatalf("merchant create: %v %s", err, out)
	}
	merchant := decode(out)
	if merchant["name"] != "Boutique" || merchant["email"] != "shop@example.td" || merchant["id"] == "" || len(merchant) != 3 {
		t.Errorf("merchant create --json: %v", merchant)
	}
	id := merchant["id"].(string)
	if out, err := run("short\n", "merchant", "create", "--name", "X", "--email", "x@example.td", "--password-stdin", "--db", db); err == nil {
		t.Errorf("a short password was accepted: %s", out)
	}
	if out, err := run("a long enough password\n", "merchant", "create", "--name", "Again", "--email", "shop@example.td", "--password-stdin", "--db", db); err == nil {
		t.Errorf("a duplicate email was accepted: %s", out)
	}
	// The merchant's owner signs in like any user of its team, so its
	// email and password meet the rules of user add; every bad field is
	// named, and nothing is made.
	for _, c := range []struct{ stdin, name, email, want string }{
		{"a long\tenough password\n", "Tab", "tab@example.td", "momopay: password must not contain control characters\n"},
		{"a long enough password\n", "Bad", "b\xffd@example.td", "momopay: email must be an address such as name@example.com\n"},
		{"a long enough password\n", "Bell\a", "bell@example.td", "momopay: name must be text, without control characters\n"},
		{"short\n", strings.Repeat("é", 201), "x y@example.td", "momopay: name must be 1 to 200 characters; email must be an address such as name@example.com; password must be 12 to 72 bytes long\n"},
	} {
		if out, err := run(c.stdin, "merchant", "create", "--name", c.name, "--email", c.email, "--password-stdin", "--db", db); err == nil || out != c.want {
			t.Errorf("merchant create --name %.20q --email %q: %v %q, want %q", c.name, c.email, err, out, c.want)
		}
	}
	out, _ = run("", "merchant", "list", "--json", "--db", db)
	if ms := decode(out)["merchants"].([]any); len(ms) != 1 || ms[0].(map[string]any)["id"] != id {
		t.Errorf("merchant list: %s", out)
	}

	out, err = run("", "apikey", "create", "--merchant", id, "--json", "--db", db)
	if err != nil {
		t.Fatalf("apikey create: %v %s", err, out)
	}
	k := decode(out)
	key, keyID := k["key"].(string), k["id"].(string)
	if !regexp.MustCompile(`^service_live_[A-Za-z0-9]{32}$`).MatchString(key) {
		t.Errorf("key %q", key)
	}
	out, _ = run("", "apikey", "list", "--merchant", id, "--json", "--db", db)
	if strings.Contains(out, key) || strings.Contains(out, key[13:]) {
		t.Errorf("apikey list shows the key: %s", out)
	}
	keys := decode(out)["api_keys"].([]any)
	if len(keys) != 1 || keys[0].(map[string]any)["id"] != keyID || keys[0].(map[string]any)["revoked_at"] != nil {
		t.Errorf("apikey list: %s", out)
	}

	// The key works against a server on the same file, and stops working
	// when revoked by the command line while the server runs.
	p := serve(t, db)
	if r := call(t, "GET", p.url+"/v1/transactions", key, ""); r["pagination"] == nil {
		t.Fatalf("the new key is refused: %v", r)
	}
	// The sandbox payer answers by hand; a late answer is kept for
	// reconciliation.
	ids := map[string]string{}
	for _, ref := range []string{"hand-1", "hand-2"} {
		r := call(t, "POST", p.url+"/v1/transactions", key, `{"reference":"`+ref+`","amount":100,"currency":"XAF","operator":"MOOV","phone_number":"+23566554433"}`)
		ids[ref] = r["id"].(string)
	}
	if out, err := run("", "sandbox", "confirm", ids["hand-1"], "--db", db); err != nil || !strings.Contains(out, "SUCCESS") {
		t.Errorf("sandbox confirm: %v %s", err, out)
	}
	if out, err := run("", "sandbox", "refuse", "--db", db, ids["hand-2"]); err != nil || !strings.Contains(out, "FAILED") {
		t.Errorf("sandbox refuse: %v %s", err, out)
	}
	for ref, want := range map[string]string{"hand-1": "SUCCESS", "hand-2": "FAILED"} {
		if r := call(t, "GET", p.url+"/v1/transactions/"+ids[ref], key, ""); r["status"] != want {
			t.Errorf("%s after the payer's answer: %v", ref, r["status"])
		}
	}
	if out, err := run("", "sandbox", "refuse", ids["hand-1"], "--db", db); err != nil || !strings.Contains(out, "already SUCCESS") || !strings.Contains(out, "recorded as a reconciliation case") {
		t.Errorf("late refusal: %v %s", err, out)
	}
	out, _ = run("", "reconcile", "list", "--json", "--db", db)
	if rec := decode(out); rec["count"] != 1.0 {
		t.Errorf("reconcile list: %s", out)
	}

	if out, err := run("", "apikey", "revoke", "--merchant", id, keyID, "--db", db); err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if r := call(t, "GET", p.url+"/v1/transactions", key, ""); r["error"] == nil {
		t.Errorf("a revoked key still works: %v", r)
	}
	if _, err := run("", "apikey", "revoke", "--merchant", id, "00000000-0000-0000-0000-000000000000", "--db", db); err == nil {
		t.Error("revoking an unknown key succeeded")
	}
	out, _ = run("", "version")
	if !strings.HasPrefix(out, "momopay ") {
		t.Errorf("version: %q", out)
	}
	if _, err := run("", "nonsense"); err == nil {
		t.Error("an unknown command succeeded")
	}
}

// TestStopsCleanly: SIGINT and SIGTERM end serve with exit status 0 after
// draining, and the database opens again afterwards.
func TestStopsCleanly(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "stop.db")
			p := serve(t, db)
			if err := stop(t, p, sig, 20*time.Second); err != nil {
				t.Fatalf("exit after %s: %v", sig, err)
			}
			if out, err := exec.Command(binary, "migrate", "--db", db).CombinedOutput(); err != nil {
				t.Errorf("database unusable after stop: %v %s", err, out)
			}
		})
	}
}

// stop sends sig to p and waits for it to exit, at most within, failing t
// if it is still running then; it returns how the process exited.
func stop(t *testing.T, p *process, sig syscall.Signal, within time.Duration) error {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		t.Fatalf("still running %v after %s:\n%s", within, sig, p.stderr)
		return nil
	}
}
