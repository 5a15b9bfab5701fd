package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOneServePerSQLiteFile: a second serve on a SQLite file another one
// serves is refused at once, naming the file; once the first is gone
// (killed, here), the file can be served again. Before, the second ran a
// second set of job workers and webhook senders on the one writer.
func TestOneServePerSQLiteFile(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "one.db")
	first := serve(t, db)
	_, errOut, err := runWith(t, nil, "", "serve", "--addr", "127.0.0.1:0", "--db", db)
	if err == nil || !strings.Contains(errOut, "another momopay serve is already serving the SQLite database "+db) {
		t.Fatalf("second serve on one SQLite file: %v\n%s", err, errOut)
	}
	first.cmd.Process.Kill()
	first.cmd.Wait()
	serve(t, db)
}

// TestConfigCheckSeesWhatServeWouldMeet: with a serve running, config
// check on the same SQLite file and port notes both (a second serve would
// meet them) and still exits 0, since the settings are right and a serve
// about to be restarted is the usual case; on a folder it cannot write in,
// it names a problem. Before, it said "serve can start with these
// settings" in all three cases.
func TestConfigCheckSeesWhatServeWouldMeet(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "one.db")
	first := serve(t, db)
	addr := strings.TrimPrefix(first.url, "http://")
	out, _, err := runWith(t, nil, "", "config", "check", "--db", db, "--addr", addr, "--admin-addr", "off")
	for _, want := range []string{
		"no problems in these settings\n\nbut serve could not start here now",
		"  - --addr " + addr + " is taken now (bind: address already in use): serve can listen there once what holds it stops",
		"  - --db: a momopay serve is serving the SQLite database " + db + " now (it holds " + db + "-serve.lock)",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("config check beside a running serve: %v, want %q in\n%s", err, want, out)
		}
	}
	out, _, _ = runWith(t, nil, "", "config", "check", "--json", "--db", db, "--addr", addr, "--admin-addr", "off")
	if r := jsonOf(t, out); r["ok"] != true || len(r["notes"].([]any)) != 2 || len(r["problems"].([]any)) != 0 {
		t.Errorf("config check --json beside a running serve: %s", out)
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()
	if out, _, err := runWith(t, nil, "", "config", "check", "--db", db, "--addr", addr, "--admin-addr", "off"); err != nil || !strings.Contains(out, "no problems: serve can start") {
		t.Errorf("config check once the serve is gone: %v\n%s", err, out)
	}

	// A folder serve cannot write in: for root, run the check as nobody.
	dir, err := os.MkdirTemp("", "momopay-readonly")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := exec.Command(binary, "config", "check", "--db", filepath.Join(dir, "m.db"), "--addr", "127.0.0.1:0", "--admin-addr", "off")
	if os.Geteuid() == 0 {
		// nobody must reach the binary and the folder, and not write there.
		for _, d := range []string{filepath.Dir(binary), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	outBytes, err := cmd.Output()
	if want := "serve cannot write in the folder " + dir; err == nil || !strings.Contains(string(outBytes), want) {
		t.Errorf("config check on a folder it cannot write in: %v, want %q in\n%s", err, want, outBytes)
	}
}
