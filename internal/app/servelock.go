package app

import (
	"path/filepath"
	"strings"

	"github.com/momopay/momopay/internal/store"
)

// serveLockSuffix names the file beside a SQLite database whose lock says
// a serve is serving it (lockSQLiteServe).
const serveLockSuffix = "-serve.lock"

// sqliteFile is the absolute path of the SQLite file a database URL names,
// and false for PostgreSQL or a URL that does not parse.
func sqliteFile(dbURL string) (string, bool) {
	dialect, target, err := store.ParseURL(dbURL)
	if err != nil || dialect != store.SQLite {
		return "", false
	}
	file, _, _ := strings.Cut(target, "?")
	abs, err := filepath.Abs(file)
	return abs, err == nil
}
