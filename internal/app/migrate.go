package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/momopay/momopay/internal/store"
)

func (c *cli) migrate(ctx context.Context, args []string) error {
	flags, db, asJSON := c.flags("migrate")
	if err := c.parseNone(flags, args); err != nil {
		return err
	}
	where, isNew := describeDatabase(*db)
	// The mode does not touch the schema; sandbox lets migrate run where
	// live mode would refuse to start.
	a, err := Open(ctx, Config{
		DatabaseURL: *db, Mode: ModeSandbox, Logger: c.quietLogger(),
	})
	if err != nil {
		return err
	}
	defer a.Close()
	s := a.Schema
	if *asJSON {
		return c.printJSON(map[string]any{
			"database": a.DB.Dialect, "location": where, "created": isNew, "applied": s.Applied, "version": s.Version,
			"build_version": s.Known,
		})
	}
	switch {
	case s.Newer():
		fmt.Fprintf(c.stdout, "the %s database %s: %s\n", a.DB.Dialect, where, s.NewerWarning())
	case isNew:
		fmt.Fprintf(c.stdout, "created the %s database %s and applied %s (schema version %d)\n", a.DB.Dialect, where, plural(s.Applied, "migration"), s.Version)
	case s.Applied > 0:
		fmt.Fprintf(c.stdout, "applied %s to the %s database %s (schema version %d)\n", plural(s.Applied, "migration"), a.DB.Dialect, where, s.Version)
	default:
		fmt.Fprintf(c.stdout, "the %s database %s is already up to date (schema version %d)\n", a.DB.Dialect, where, s.Version)
	}
	return nil
}

// describeDatabase names a database for people: a SQLite file by its
// absolute path (so a command run in the wrong folder shows it), with
// whether it does not exist yet; PostgreSQL without its password.
func describeDatabase(url string) (where string, missing bool) {
	dialect, target, err := store.ParseURL(url)
	if err != nil || dialect != store.SQLite {
		return store.Redact(url), false
	}
	file, _, _ := strings.Cut(target, "?")
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	_, err = os.Stat(file)
	return file, errors.Is(err, fs.ErrNotExist)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
