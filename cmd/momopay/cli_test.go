package main_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runIn runs the binary in dir with extra environment variables and
// returns its output streams and exit code. A command that should fail
// but serves instead is killed after a while rather than hang the test.
func runIn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// TestHelpExitsZero: the help forms a new user tries print the usage on
// stdout, nothing on stderr, and exit 0.
func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"help"}, {"--help"}, {"-h"}, {"apikey", "-h"}, {"apikey", "revoke", "-h"}, {"serve", "--help"}, {"help", "sandbox", "confirm"},
	} {
		out, errOut, code := runIn(t, dir, nil, args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "momopay ") || !regexp.MustCompile(`[A-Z_]+_ID|HOST:PORT`).MatchString(out) {
			t.Errorf("momopay %s: exit %d, stderr %q, stdout:\n%s", strings.Join(args, " "), code, errOut, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("help left files behind: %v", entries)
	}
}

// TestErrorsPrintedOnce: a failing command exits 1 and prints its error
// once, with one "momopay:" prefix, saying what to do.
func TestErrorsPrintedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"nonsense"}, `unknown command "nonsense": run "momopay help"`},
		{[]string{"apikey"}, "apikey needs a subcommand"},
		{[]string{"apikey", "revoke", "--merchant", "m"}, "takes one argument (KEY_ID)"},
		{[]string{"apikey", "list"}, "--merchant is required"},
		{[]string{"merchant", "list", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"serve", "--json"}, "serve does not offer --json"},
		{[]string{"serve", "--pending-ttl", "0"}, "--pending-ttl 0s is out of range"},
		// Run in the wrong folder: the default file is named, not created.
		{[]string{"merchant", "list"}, "no SQLite database at " + filepath.Join(dir, "momopay.db") + `: create it with "momopay migrate`},
		{[]string{"reconcile", "list", "--db", "mysql://x"}, `unsupported database URL scheme "mysql"`},
	}
	for _, c := range cases {
		out, errOut, code := runIn(t, dir, []string{"MOMOPAY_DATABASE_URL="}, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("momopay %s: exit %d, stdout %q, stderr %q, want %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
		if n := strings.Count(errOut, "momopay:"); n != 1 || !strings.HasPrefix(errOut, "momopay: ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("momopay %s: want one line with one prefix, got %q", strings.Join(c.args, " "), errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "momopay.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a command created momopay.db in the working folder: %v", err)
	}
	// No command at all: the usage, then one error line.
	_, errOut, code := runIn(t, dir, nil)
	if code != 1 || strings.Count(errOut, "momopay:") != 1 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("momopay alone: exit %d, stderr %q", code, errOut)
	}
}

// TestDatabaseFileModes: the SQLite file and its -wal and -shm hold
// webhook secrets: whoever creates them (serve, migrate) makes them 0600,
// even under a umask that would allow everyone to read and write.
func TestDatabaseFileModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// sh sets the umask for the process it execs.
	umask000 := func(args ...string) *exec.Cmd {
		return exec.Command("sh", append([]string{"-c", `umask 000; exec "$0" "$@"`, binary}, args...)...)
	}
	migrated := filepath.Join(dir, "migrated.db")
	if out, err := umask000("migrate", "--db", migrated).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	assertMode(t, migrated)

	served := filepath.Join(dir, "served.db")
	p := start(t, umask000("serve", "--addr", "127.0.0.1:0", "--db", served))
	if r, err := http.Get(p.url + "/healthz"); err == nil {
		r.Body.Close()
	}
	for _, f := range []string{served, served + "-wal", served + "-shm"} {
		assertMode(t, f)
	}
	// The control: this umask does let other files be world-writable.
	other := filepath.Join(dir, "other")
	if err := exec.Command("sh", "-c", "umask 000; touch "+other).Run(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(other); err != nil || st.Mode().Perm() != 0o666 {
		t.Fatalf("umask 000 control: %v %v", st.Mode(), err)
	}
}

func assertMode(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want -rw-------", filepath.Base(path), st.Mode().Perm())
	}
}

// TestBannerURL: with a wildcard listen address the banner gives a URL a
// person can open, and says the server listens on all interfaces.
func TestBannerURL(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "banner.db")
	p := serve(t, db, "--addr", ":0") // the last --addr wins
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+$`).MatchString(p.url) {
		t.Errorf("banner URL %q", p.url)
	}
	if !strings.Contains(p.stdout.String(), "curl -s "+p.url+"/v1/transactions") {
		t.Errorf("the demo curl does not use the banner URL:\n%s", p.stdout)
	}
	r, err := http.Get(p.url + "/healthz")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("GET the banner URL: %v", err)
	}
	r.Body.Close()
}

// TestRateLimitSettings: serve's --rate-limit and --rate-burst, and their
// environment variables, set the per-merchant limit; 0 turns it off.
func TestRateLimitSettings(t *testing.T) {
	t.Parallel()
	count429 := func(p *process, n int) int {
		key := apiKeyLine.FindStringSubmatch(p.stdout.String())[1]
		limited := 0
		for range n {
			req, _ := http.NewRequest("GET", p.url+"/v1/transactions", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode == http.StatusTooManyRequests {
				limited++
			}
		}
		return limited
	}
	byFlag := serve(t, filepath.Join(t.TempDir(), "flag.db"), "--rate-limit", "0.5", "--rate-burst", "2")
	if n := count429(byFlag, 5); n < 2 {
		t.Errorf("--rate-limit 0.5 --rate-burst 2: %d of 5 requests limited, want at least 2", n)
	}
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "env.db"))
	cmd.Env = append(os.Environ(), "MOMOPAY_RATE_LIMIT=0.5", "MOMOPAY_RATE_BURST=2")
	if n := count429(start(t, cmd), 5); n < 2 {
		t.Errorf("MOMOPAY_RATE_LIMIT=0.5 MOMOPAY_RATE_BURST=2: %d of 5 requests limited, want at least 2", n)
	}
	off := serve(t, filepath.Join(t.TempDir(), "off.db"), "--rate-limit", "0", "--rate-burst", "1")
	if n := count429(off, 150); n != 0 {
		t.Errorf("--rate-limit 0: %d of 150 requests limited, want none", n)
	}
}
