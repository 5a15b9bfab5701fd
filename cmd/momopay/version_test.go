package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestReleaseBuildVersion: deploy/build.sh records the version, commit and
// date it is given, and "momopay version" prints them; a plain build
// prints what the toolchain recorded, or dev and unknown.
func TestReleaseBuildVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("a release build compiles everything again (no cgo, -trimpath)")
	}
	t.Parallel()
	version := func(bin string) map[string]string {
		out, err := exec.Command(bin, "version", "--json").Output()
		var v map[string]string
		if err != nil || json.Unmarshal(out, &v) != nil {
			t.Fatalf("%s version --json: %v %s", bin, err, out)
		}
		return v
	}
	bin := filepath.Join(t.TempDir(), "momopay-release")
	build := exec.Command("../../deploy/build.sh", bin)
	build.Env = append(os.Environ(), "VERSION=v1.4.2", "COMMIT=0123456789abcdef0123456789abcdef01234567", "BUILD_DATE=2026-11-22T09:00:00Z")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("deploy/build.sh: %v\n%s", err, out)
	}
	want := map[string]string{"version": "v1.4.2", "commit": "0123456789abcdef0123456789abcdef01234567", "date": "2026-11-22T09:00:00Z"}
	if got := version(bin); len(got) != 3 || got["version"] != want["version"] || got["commit"] != want["commit"] || got["date"] != want["date"] {
		t.Errorf("release build: %v, want %v", got, want)
	}
	if out, _ := exec.Command(bin, "version").Output(); string(out) != "momopay v1.4.2 (commit 0123456789abcdef0123456789abcdef01234567, built 2026-11-22T09:00:00Z)\n" {
		t.Errorf("momopay version: %q", out)
	}

	plain := version(binary)
	if plain["version"] == "" || !regexp.MustCompile(`^(unknown|[0-9a-f]{40}(-dirty)?)$`).MatchString(plain["commit"]) || plain["date"] == "" {
		t.Errorf("plain build: %v", plain)
	}
}
