package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// migrations holds each dialect's schema migrations (migrations/postgres,
// migrations/sqlite), applied by goose in order.
//
//go:embed migrations
var migrations embed.FS

// Migrations says what ApplyMigrations did.
type Migrations struct {
	// Applied counts the migrations applied by this call.
	Applied int
	// Version is the schema version the database is at afterwards.
	Version int64
	// Known is the latest version this build knows. A database past it
	// was migrated by a newer build (this one was rolled back). It still
	// runs, as the migrations so far only add to what an earlier release
	// reads, and refusing would leave a rollback only the restore of a
	// backup, losing every payment since; but it is said (Newer).
	Known int64
}

// Newer reports a schema migrated by a newer build than this one.
func (m Migrations) Newer() bool { return m.Version > m.Known }

// NewerWarning says what Newer means, for the log and the CLI.
func (m Migrations) NewerWarning() string {
	return fmt.Sprintf("the database's schema is at version %d, newer than this build's %d: a newer momopay migrated it; "+
		"this build runs on it only if those migrations changed nothing it reads (see the Upgrade section of docs/operations.md)", m.Version, m.Known)
}

// Migrate applies momopay's schema migrations.
func (db *DB) Migrate(ctx context.Context) error {
	_, err := db.ApplyMigrations(ctx)
	return err
}

// ApplyMigrations applies momopay's pending schema migrations and says how
// many there were, so that "momopay migrate" can tell a new database from
// one already up to date.
func (db *DB) ApplyMigrations(ctx context.Context) (Migrations, error) {
	p, err := db.migrationProvider()
	if err != nil {
		return Migrations{}, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return Migrations{}, fmt.Errorf("migrate: %w", err)
	}
	v, known, err := p.GetVersions(ctx)
	if err != nil {
		return Migrations{}, fmt.Errorf("migrate: read the schema version: %w", err)
	}
	return Migrations{Applied: len(results), Version: v, Known: known}, nil
}

// HasSchema reports whether momopay's migrations were ever applied here,
// without creating anything: commands other than serve and migrate refuse
// a database that was never set up.
func (db *DB) HasSchema(ctx context.Context) (bool, error) {
	q := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'`
	if db.Dialect == Postgres {
		q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'goose_db_version'`
	}
	var n int
	err := db.QueryRowContext(ctx, q).Scan(&n)
	return n > 0, err
}

func (db *DB) migrationProvider() (*goose.Provider, error) {
	dir, dialect := "migrations/sqlite", goose.DialectSQLite3
	if db.Dialect == Postgres {
		dir, dialect = "migrations/postgres", goose.DialectPostgres
	}
	sub, err := fs.Sub(migrations, dir)
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(dialect, db.DB, sub)
}
