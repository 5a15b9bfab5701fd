package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/momopay/momopay/internal/store"
)

// openDatabase opens cfg.DatabaseURL; with cfg.ExistingDatabase it neither
// creates a SQLite file nor sets up a schema in an empty database, and
// says which command would.
func openDatabase(ctx context.Context, cfg Config) (*store.DB, error) {
	if cfg.Mode == ModeLive {
		cfg.DatabaseURL = store.Durable(cfg.DatabaseURL)
	}
	if !cfg.ExistingDatabase {
		return store.Open(ctx, cfg.DatabaseURL)
	}
	db, err := store.OpenExisting(ctx, cfg.DatabaseURL)
	var missing *store.NoDatabaseError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("%w: create it with \"momopay migrate --db %s\", or pass --db (or set MOMOPAY_DATABASE_URL) to use an existing database", err, shellQuote(missing.Path))
	}
	if err != nil {
		return nil, err
	}
	ok, err := db.HasSchema(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("the %s database %s has no momopay tables: set it up with \"momopay migrate\" and the same --db, or pass --db to use another", db.Dialect, store.Redact(cfg.DatabaseURL))
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// shellQuote writes s so that it can be pasted into a shell command.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
