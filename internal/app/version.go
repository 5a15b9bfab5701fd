package app

import (
	"context"
	"fmt"
	"runtime/debug"
)

// The release build (deploy/build.sh) sets these with
//
//	go build -ldflags "-X github.com/momopay/momopay/internal/app.Version=v1.2.0 -X ...app.Commit=... -X ...app.Date=..."
//
// Left empty, they come from what the Go toolchain recorded in the binary
// (buildInfo): the module version and the commit and its time when built
// from a git checkout.
var (
	Version string
	Commit  string
	Date    string
)

func init() {
	Version, Commit, Date = buildInfo(Version, Commit, Date)
}

// buildInfo fills what -ldflags left empty from debug.ReadBuildInfo, and
// what that lacks with "dev" and "unknown".
func buildInfo(version, commit, date string) (string, string, string) {
	if info, ok := debug.ReadBuildInfo(); ok {
		if version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
		modified := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.time":
				if date == "" {
					date = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit != "" && len(commit) == 40 {
			commit += "-dirty"
		}
	}
	return or(version, "dev"), or(commit, "unknown"), or(date, "unknown")
}

func (c *cli) version(_ context.Context, args []string) error {
	fs := c.newFlags("version")
	asJSON := jsonFlag(fs)
	if err := c.parseNone(fs, args); err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(map[string]string{"version": Version, "commit": Commit, "date": Date})
	}
	fmt.Fprintf(c.stdout, "momopay %s (commit %s, built %s)\n", Version, Commit, Date)
	return nil
}
