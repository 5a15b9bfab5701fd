package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" driver
	"modernc.org/sqlite"
)

// Dialect names a database engine.
type Dialect string

// The two supported engines.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DB is an open momopay database.
type DB struct {
	*sql.DB
	Dialect Dialect
	// pgTarget is the PostgreSQL connection string, kept so OpenPool can
	// reach the same database through pgx's own pool.
	pgTarget string
	// txConns maps each PostgreSQL transaction InTx runs to the connection
	// it runs on (ConnOf).
	txConns sync.Map
	// readers, on SQLite only, are read-only connections beside the one
	// writer (see Reader).
	readers *sql.DB
	// pool, on PostgreSQL only, holds the connections *sql.DB uses.
	pool *pgxpool.Pool
}

// mainPoolSize bounds the PostgreSQL connections of the pool requests and
// jobs' database work share (the job queues' own pool is apart).
const mainPoolSize = 20

// Pool returns the pgx pool under the *sql.DB on PostgreSQL (its
// statistics are the pool's, database/sql's own being empty), or nil.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// sqliteReaders bounds the read-only SQLite connections: about one per
// core is what reads can use in parallel.
const sqliteReaders = 4

// Reader is where the hot reads (an API key, a payment, a list page, a
// webhook delivery about to be attempted) go.
// On SQLite the one connection that serialises writes would also queue
// every read behind them; in WAL mode readers on other connections see
// every committed write without waiting for the writer, so these reads
// use a pool of their own. On PostgreSQL it is the one pool.
func (db *DB) Reader() *sql.DB {
	if db.readers != nil {
		return db.readers
	}
	return db.DB
}

// Close closes the database's connections.
func (db *DB) Close() error {
	if db.readers != nil {
		db.readers.Close()
	}
	err := db.DB.Close()
	if db.pool != nil {
		db.pool.Close()
	}
	return err
}

// sqlitePragmas make SQLite safe for a server: WAL for concurrent readers,
// a busy timeout so the CLI and the server can share the file, foreign keys
// on, and BEGIN IMMEDIATE so writers queue instead of failing on upgrade.
// journal_size_limit cuts the WAL file back to 64 MiB each time it starts
// over: otherwise it keeps the size of its largest burst for good (the DoS
// audit's backlog left 518 MB of WAL that stayed, restarts included).
const sqlitePragmas = "_pragma=journal_mode(WAL)&_pragma=journal_size_limit(67108864)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// Open connects to url (see ParseURL), creating a SQLite file that does
// not exist yet. Only the commands that set a database up (serve, migrate)
// and tests should create one: others use OpenExisting.
func Open(ctx context.Context, url string) (*DB, error) {
	return open(ctx, url, true)
}

// OpenExisting is Open for a database that must already exist: a missing
// SQLite file is a *NoDatabaseError rather than a new, empty file left in
// whatever folder the command happened to run in.
func OpenExisting(ctx context.Context, url string) (*DB, error) {
	return open(ctx, url, false)
}

// NoDatabaseError says that a SQLite file to be opened does not exist.
type NoDatabaseError struct {
	Path string // absolute
}

func (e *NoDatabaseError) Error() string {
	return fmt.Sprintf("no SQLite database at %s", e.Path)
}

func open(ctx context.Context, url string, create bool) (*DB, error) {
	dialect, target, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	if dialect == Postgres {
		// database/sql runs over a pgx pool rather than pooling connections
		// itself: when every connection is busy, database/sql hands the next
		// free one to a waiter picked at random, so under load a request
		// could lose that draw many times over; pgx's pool serves waiters
		// in the order they came. Same throughput, a shorter tail: creates
		// at 32 connections went from a p99 of 226–271 ms to 143–162 ms
		// (docs/performance.md). The pool keeps its connections open while
		// idle (a new one is a PostgreSQL backend start) and checks one idle
		// for over a second before handing it out.
		poolConf, err := pgPoolConfig(target, mainPoolSize)
		if err != nil {
			return nil, fmt.Errorf("connect to PostgreSQL at %s: %w", Redact(target), unquoted(err))
		}
		pool, err := pgxpool.NewWithConfig(ctx, poolConf)
		if err != nil {
			return nil, fmt.Errorf("connect to PostgreSQL at %s: %w", Redact(target), unquoted(err))
		}
		db := &DB{DB: stdlib.OpenDBFromPool(pool), Dialect: Postgres, pgTarget: target, pool: pool}
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			hint := ""
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "3D000" {
				hint = " (momopay creates tables, not databases: create it first, e.g. with createdb, or fix --db)"
			}
			return nil, fmt.Errorf("connect to PostgreSQL at %s: %w%s", Redact(target), unquoted(err), hint)
		}
		return db, nil
	}
	return openSQLite(ctx, target, create)
}

// openSQLite opens the file at path (a file name, with an optional ?query
// of SQLite URI parameters).
func openSQLite(ctx context.Context, path string, create bool) (*DB, error) {
	file, query, _ := strings.Cut(path, "?")
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("SQLite path %q: %w", file, err)
	}
	if err := prepareSQLiteFile(abs, create); err != nil {
		return nil, err
	}
	params := sqlitePragmas
	if strings.Contains(query, "synchronous(") {
		// The caller chose (Durable): ours must not override it.
		params = strings.Replace(params, "&_pragma=synchronous(NORMAL)", "", 1)
	}
	if query != "" {
		params = query + "&" + params
	}
	// mode=rw: the file exists by now (prepareSQLiteFile made it with the
	// right mode), and SQLite must not create it with the umask's.
	sqldb, err := openSQLiteDB("file:" + abs + "?mode=rw&" + params)
	if err != nil {
		return nil, fmt.Errorf("open SQLite database %s: %w", abs, err)
	}
	// SQLite has one writer; one connection avoids SQLITE_BUSY between
	// our own goroutines (River's advice for its SQLite driver).
	sqldb.SetMaxOpenConns(1)
	db := &DB{DB: sqldb, Dialect: SQLite}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		// SQLite's "unable to open database file (14)" hides the cause
		// (permissions, most often); the operating system names it.
		f, oserr := os.OpenFile(abs, os.O_RDWR, 0)
		if oserr != nil {
			return nil, fmt.Errorf("open SQLite database %s: %w", abs, oserr)
		}
		f.Close()
		return nil, fmt.Errorf("open SQLite database %s: %w", abs, err)
	}
	// The readers: query_only, so a write sent here by mistake fails
	// instead of racing the writer. The writer above has already put the
	// file in WAL mode, which persists.
	readParams := "_pragma=busy_timeout(5000)&_pragma=query_only(1)"
	if query != "" {
		readParams = query + "&" + readParams
	}
	if db.readers, err = openSQLiteDB("file:" + abs + "?mode=rw&" + readParams); err != nil {
		db.Close()
		return nil, fmt.Errorf("open SQLite database %s: %w", abs, err)
	}
	db.readers.SetMaxOpenConns(sqliteReaders)
	db.readers.SetMaxIdleConns(sqliteReaders)
	return db, nil
}

// openSQLiteDB is sql.Open for SQLite, with each connection keeping its
// statements prepared (stmtCache).
func openSQLiteDB(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(stmtCache{c}), nil
}

// sqliteFileMode keeps the database to its owner: it holds webhook signing
// secrets and password hashes. SQLite gives its -wal and -shm files the
// mode of the database file (and fchmods them, so the umask does not
// matter), hence setting it on the database file covers all three.
const sqliteFileMode = 0o600

// prepareSQLiteFile makes sure the database file exists, creating it with
// sqliteFileMode when allowed, and reports a missing folder or file in
// words a person can act on.
func prepareSQLiteFile(abs string, create bool) error {
	st, err := os.Stat(abs)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("SQLite path %s is a folder, not a database file", abs)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("SQLite database %s: %w", abs, err)
	case !create:
		return &NoDatabaseError{Path: abs}
	}
	if dir := filepath.Dir(abs); !isDir(dir) {
		return fmt.Errorf("cannot create SQLite database %s: the folder %s does not exist", abs, dir)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, sqliteFileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil // another process made it first
	}
	if err != nil {
		return fmt.Errorf("cannot create SQLite database %s: %w", abs, err)
	}
	defer f.Close()
	// The umask may have taken bits off; set exactly the mode we mean.
	if err := f.Chmod(sqliteFileMode); err != nil {
		return fmt.Errorf("cannot set the mode of SQLite database %s: %w", abs, err)
	}
	return nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// defaultConnectTimeout bounds each new PostgreSQL connection when the URL
// sets no connect_timeout. Without it, a host that accepts the TCP
// connection and never answers (a stuck server, a proxy with nothing
// behind it) held serve at its start forever, silently, with no listener
// for /healthz, and every command with it. connect_timeout in the URL
// still decides.
const defaultConnectTimeout = 10 * time.Second

// maxConns is how many connections the pool under db may hold.
func (db *DB) maxConns() int {
	if db.pool != nil {
		return int(db.pool.Config().MaxConns)
	}
	return db.Stats().MaxOpenConnections
}

// pgPoolConfig parses a PostgreSQL URL into the configuration of a pool of
// at most maxConns connections, each with defaultConnectTimeout when the
// URL sets none. The pool database/sql runs over and the job queues' pool
// are made from it.
func pgPoolConfig(target string, maxConns int32) (*pgxpool.Config, error) {
	conf, err := pgxpool.ParseConfig(target)
	if err != nil {
		return nil, err
	}
	if conf.ConnConfig.ConnectTimeout == 0 {
		conf.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	conf.MaxConns = maxConns
	return conf, nil
}

// pgConnConfig parses a PostgreSQL URL, with defaultConnectTimeout when it
// sets none. Every connection momopay opens is made so: the LISTEN
// connections from it, the pools' from pgPoolConfig.
func pgConnConfig(target string) (*pgx.ConnConfig, error) {
	conf, err := pgx.ParseConfig(target)
	if err != nil {
		return nil, err
	}
	if conf.ConnectTimeout == 0 {
		conf.ConnectTimeout = defaultConnectTimeout
	}
	return conf, nil
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
