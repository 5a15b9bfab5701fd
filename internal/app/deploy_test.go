package app

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSystemdUnit: deploy/momopay.service runs serve as its own user,
// hardened, with its secrets from a file, restarts on failure, and waits
// longer for a stop than serve takes to drain; systemd-analyze accepts it
// where it is installed.
func TestSystemdUnit(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/momopay.service")
	if err != nil {
		t.Fatal(err)
	}
	set := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			set[k] = append(set[k], v)
		}
	}
	want := map[string]string{
		"User": "momopay", "Group": "momopay", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
		"PrivateTmp": "yes", "ProtectHome": "yes", "ReadWritePaths": "/var/lib/momopay",
		"StateDirectory": "momopay", "EnvironmentFile": "/etc/momopay/momopay.env",
		"Restart": "on-failure", "KillSignal": "SIGTERM", "ExecStart": "/usr/local/bin/momopay serve",
	}
	for k, v := range want {
		if got := set[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%v, want %s", k, got, v)
		}
	}
	stop, err := time.ParseDuration(strings.Join(set["TimeoutStopSec"], ""))
	if err != nil || stop <= DefaultShutdownGrace+handBackTimeout {
		t.Errorf("TimeoutStopSec=%v (%v): must exceed the shutdown grace %s and the hand-back %s", set["TimeoutStopSec"], err, DefaultShutdownGrace, handBackTimeout)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("no systemd-analyze: the unit is not verified by systemd")
		return
	}
	// systemd checks that ExecStart exists: point it at this test binary.
	unit := filepath.Join(t.TempDir(), "momopay.service")
	exe, _ := os.Executable()
	os.WriteFile(unit, []byte(strings.ReplaceAll(string(raw), "/usr/local/bin/momopay", exe)), 0o644)
	if out, err := exec.Command("systemd-analyze", "verify", unit).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
