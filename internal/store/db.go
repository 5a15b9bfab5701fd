package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Dialect names a database engine.
type Dialect string

// The two supported engines.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

//go:embed migrations
var migrations embed.FS

// DB is an open momopay database.
type DB struct {
	*sql.DB
	Dialect Dialect
}

// sqlitePragmas make SQLite safe for a server: WAL for concurrent readers,
// a busy timeout so the CLI and the server can share the file, foreign keys
// on, and BEGIN IMMEDIATE so writers queue instead of failing on upgrade.
const sqlitePragmas = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// Open connects to url: postgres:// or postgresql:// for PostgreSQL,
// anything else is a SQLite file path, optionally written sqlite:PATH.
func Open(ctx context.Context, url string) (*DB, error) {
	var db *DB
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		sqldb, err := sql.Open("pgx", url)
		if err != nil {
			return nil, err
		}
		sqldb.SetMaxOpenConns(20)
		db = &DB{DB: sqldb, Dialect: Postgres}
	default:
		path := strings.TrimPrefix(url, "sqlite:")
		if path == "" {
			return nil, errors.New("empty SQLite path")
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		sqldb, err := sql.Open("sqlite", "file:"+path+sep+sqlitePragmas)
		if err != nil {
			return nil, err
		}
		// SQLite has one writer; one connection avoids SQLITE_BUSY between
		// our own goroutines (River's advice for its SQLite driver).
		sqldb.SetMaxOpenConns(1)
		db = &DB{DB: sqldb, Dialect: SQLite}
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s database: %w", db.Dialect, err)
	}
	return db, nil
}

// Migrate applies momopay's schema migrations.
func (db *DB) Migrate(ctx context.Context) error {
	dir, dialect := "migrations/sqlite", goose.DialectSQLite3
	if db.Dialect == Postgres {
		dir, dialect = "migrations/postgres", goose.DialectPostgres
	}
	sub, err := fs.Sub(migrations, dir)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(dialect, db.DB, sub)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// InTx runs fn in one database transaction, committing when it returns nil.
func (db *DB) InTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// InSnapshot runs fn in a read-only transaction that sees one consistent
// state across its queries (a list and its details read apart could
// otherwise straddle a write). SQLite's transaction already does; on
// PostgreSQL it takes REPEATABLE READ.
func (db *DB) InSnapshot(ctx context.Context, fn func(tx *sql.Tx) error) error {
	opts := &sql.TxOptions{}
	if db.Dialect == Postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// timeLayout is fixed-width so that SQLite's text order is time order.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// Time converts t into a query argument for this database, in UTC at
// PostgreSQL's microsecond precision.
func (db *DB) Time(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if db.Dialect == SQLite {
		return t.Format(timeLayout)
	}
	return t
}

// NullTime is Time for an optional time; the zero time is NULL.
func (db *DB) NullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return db.Time(t)
}

// Timestamp scans a time column from either engine: PostgreSQL returns
// time.Time, SQLite the text written by Time.
type Timestamp struct{ time.Time }

// Scan implements sql.Scanner.
func (ts *Timestamp) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		ts.Time = time.Time{}
	case time.Time:
		ts.Time = v.UTC()
	case string:
		return ts.parse(v)
	case []byte:
		return ts.parse(string(v))
	default:
		return fmt.Errorf("cannot scan %T into a timestamp", v)
	}
	return nil
}

func (ts *Timestamp) parse(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	ts.Time = t.UTC()
	return nil
}

// IsUniqueViolation reports whether err is a unique-constraint failure
// naming constraint (a column or index name) on either engine.
func IsUniqueViolation(err error, constraint string) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	isUnique := strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "SQLSTATE 23505")
	return isUnique && strings.Contains(msg, constraint)
}
