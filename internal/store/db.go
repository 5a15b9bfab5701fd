package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" driver
	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
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

// MainPoolSize bounds the PostgreSQL connections of the pool requests and
// jobs' database work share (the job queues' own pool is apart).
const MainPoolSize = 20

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
const sqlitePragmas = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"

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
		poolConf, err := pgPoolConfig(target, MainPoolSize)
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

// pgKeywords are the libpq connection parameters a key=value connection
// string starts with; pgx accepts the same form.
var pgKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"password": true, "passfile": true, "sslmode": true, "sslcert": true, "sslkey": true,
	"sslrootcert": true, "sslpassword": true, "sslsni": true, "connect_timeout": true,
	"application_name": true, "target_session_attrs": true, "service": true,
	"servicefile": true, "options": true, "search_path": true, "channel_binding": true,
}

var (
	urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)
	kvPair    = regexp.MustCompile(`^\s*([A-Za-z_]+)\s*=`)
)

// ParseURL tells which engine a database address names and returns what
// that engine's driver takes: for PostgreSQL a postgres:// or postgresql://
// URL, or a libpq key=value string ("host=127.0.0.1 user=postgres
// dbname=momopay"); for SQLite a file path, optionally written sqlite:PATH.
// Anything else that looks like a URL or a key=value string is refused
// rather than taken as a strange file name.
func ParseURL(url string) (Dialect, string, error) {
	if m := urlScheme.FindStringSubmatch(url); m != nil {
		switch strings.ToLower(m[1]) {
		case "postgres", "postgresql":
			if strings.Count(url, "@") > 1 || strings.Contains(url, "#") {
				// Read as a URL, the password's end would land in the host
				// or the database name, and from there in error messages.
				return "", "", fmt.Errorf("PostgreSQL URL %s: percent-encode @, / and # in the user name and password (%%40, %%2F, %%23), or use host=... password=... instead", Redact(url))
			}
			return Postgres, url, nil
		case "sqlite", "sqlite3", "file":
			path := url[len(m[0]):]
			if path == "" {
				return "", "", fmt.Errorf("empty SQLite path in %q", url)
			}
			return SQLite, path, nil
		}
		return "", "", fmt.Errorf("unsupported database URL scheme %q in --db: use a SQLite file path, sqlite:PATH, postgres://USER@HOST:5432/DB or host=HOST user=USER dbname=DB", m[1])
	}
	if m := kvPair.FindStringSubmatch(url); m != nil {
		if !pgKeywords[strings.ToLower(m[1])] {
			return "", "", fmt.Errorf("database %q looks like a key=value connection string, but %q is not a PostgreSQL parameter (host, port, dbname, user, ...); for a SQLite file whose name has \"=\" in it, write sqlite:PATH", Redact(url), m[1])
		}
		return Postgres, url, nil
	}
	for _, prefix := range []string{"sqlite:", "sqlite3:", "file:"} {
		if len(url) >= len(prefix) && strings.EqualFold(url[:len(prefix)], prefix) {
			url = url[len(prefix):]
			break
		}
	}
	if strings.TrimSpace(url) == "" {
		return "", "", errors.New("empty database address: pass --db with a SQLite path or a PostgreSQL URL")
	}
	return SQLite, url, nil
}

// Durable returns url asking SQLite to sync every commit to disk
// (synchronous=FULL), so that a payment acknowledged survives a power cut;
// live mode uses it. WAL with synchronous=NORMAL, the default here, can
// lose the last commits on a power cut (never corrupts). PostgreSQL URLs
// are returned as they are: it is durable by default.
func Durable(url string) string {
	if dialect, _, err := ParseURL(url); err != nil || dialect != SQLite {
		return url
	}
	if strings.Contains(url, "?") {
		return url + "&_pragma=synchronous(FULL)"
	}
	return url + "?_pragma=synchronous(FULL)"
}

// Redact hides the passwords of a database or Redis address, for
// messages: the one in the user part, and those given as parameters of
// the query string (?password=..., ?sslpassword=..., which libpq and pgx
// read as well) or of a key=value string. A URL that does not parse as
// one (a password holding an unescaped '#', '/' or '@', a space in the
// host, a bad port) still has its whole user part hidden: everything
// between "://" and the last '@'.
func Redact(dsn string) string {
	if u, err := neturl.Parse(dsn); err == nil && u.Scheme != "" && strings.Count(dsn, "@") <= 1 {
		u.RawQuery = redactQuery(u.RawQuery)
		return u.Redacted()
	}
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			rest = "xxxxx" + rest[at:]
		}
		if before, query, ok := strings.Cut(rest, "?"); ok {
			rest = before + "?" + redactQuery(query)
		}
		return scheme + "://" + rest
	}
	return pgPassword.ReplaceAllString(dsn, "password=xxxxx")
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

// unquoted is err without the connection string pgx quotes when it cannot
// parse one ("cannot parse `postgres://...`: sslmode is invalid"). pgx
// hides a password in the user part and in key=value form, but not one
// given as a URL parameter (?password=, ?sslpassword=); the callers name
// the string themselves, through Redact. The error still unwraps to
// pgx's, for errors.As.
func unquoted(err error) error {
	var parse *pgconn.ParseConfigError
	if !errors.As(err, &parse) {
		return err
	}
	msg := err.Error()
	start := strings.Index(msg, "cannot parse `")
	end := strings.LastIndex(msg, "`: ")
	if start < 0 || end < start {
		return &scrubbed{msg: "the connection string cannot be parsed", err: err}
	}
	return &scrubbed{msg: msg[:start] + "cannot parse it: " + msg[end+len("`: "):], err: err}
}

// scrubbed is an error shown with another message than the one it wraps.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// pgPassword is a password in a key=value string; it matches sslpassword
// too.
var pgPassword = regexp.MustCompile(`password\s*=\s*('(\\.|[^'])*'|\S+)`)

// redactQuery hides the value of every query parameter whose name, once
// unescaped, holds "password", keeping the rest of the query as written.
func redactQuery(query string) string {
	if query == "" {
		return query
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		key, _, ok := strings.Cut(p, "=")
		if name, err := neturl.QueryUnescape(key); ok && (err != nil || strings.Contains(strings.ToLower(name), "password")) {
			params[i] = key + "=xxxxx"
		}
	}
	return strings.Join(params, "&")
}

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

// InTx runs fn in one database transaction, committing when it returns nil.
//
// On PostgreSQL the transaction runs on a connection held for its length,
// which ConnOf returns: River's pgx driver inserts a payment's jobs on it,
// inside the transaction, at half the cost of its database/sql driver.
func (db *DB) InTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	var tx *sql.Tx
	var err error
	if db.Dialect == Postgres {
		var conn *sql.Conn
		if conn, tx, err = db.beginOnConn(ctx); err != nil {
			return err
		}
		defer conn.Close()
		db.txConns.Store(tx, conn)
		defer db.txConns.Delete(tx)
	} else {
		var conn *sql.Conn
		if conn, tx, err = db.beginWriter(ctx); err != nil {
			return err
		}
		defer conn.Close()
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// beginWriter takes SQLite's one writer connection, waiting for it no
// longer than connWait says, and begins a transaction on it (IMMEDIATE:
// it takes the write lock). A BEGIN refused after the busy timeout (the
// write lock held by another process) wrote nothing, so it is tried again
// while the wait's deadline allows, the writer given back between tries
// for the others queued; so a lock held for less than a request's budget
// is waited out, whatever it overlaps. A wait without a deadline (a
// command) tries once.
func (db *DB) beginWriter(ctx context.Context) (*sql.Conn, *sql.Tx, error) {
	wait := connWait(ctx)
	_, bounded := wait.Deadline()
	for {
		conn, err := db.Conn(wait)
		if err != nil {
			return nil, nil, err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err == nil {
			return conn, tx, nil
		}
		conn.Close()
		if !bounded || !sqliteBusy(err) || wait.Err() != nil {
			return nil, nil, err
		}
	}
}

// beginOnConn takes a connection and begins a transaction on it. One found
// broken at BEGIN is discarded and another taken, as database/sql's own
// BeginTx does; a pinned sql.Conn does not retry by itself, and the
// request would get a 503 for a connection nobody needed. Broken means
// driver.ErrBadConn (pgx closed it after a cancelled query) or a
// connection that BEGIN found closed: a server that ends its sessions
// (a restart, a failover, an administrator) sends each a FATAL error
// first, which BEGIN reads as its answer (57P01) when the connection was
// used within the last second, before pgx's own liveness check applies.
// Nothing ran in the transaction yet, so taking another is always safe.
// Every idle connection of the pool may be broken at once (after a
// restart), and each is discarded when found, so it tries up to one more
// than the pool holds: the last is a new connection.
func (db *DB) beginOnConn(ctx context.Context) (*sql.Conn, *sql.Tx, error) {
	for attempt := 1; ; attempt++ {
		conn, err := db.Conn(connWait(ctx))
		if err != nil {
			return nil, nil, err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err == nil {
			return conn, tx, nil
		}
		broken := errors.Is(err, driver.ErrBadConn) || closed(conn)
		conn.Close()
		if !broken || attempt > db.maxConns() {
			return nil, nil, err
		}
	}
}

// closed reports whether pgx has closed conn's connection (after a fatal
// error or a broken socket); database/sql discards such a connection when
// it is given back.
func closed(conn *sql.Conn) bool {
	var isClosed bool
	conn.Raw(func(dc any) error {
		if c, ok := dc.(*stdlib.Conn); ok {
			isClosed = c.Conn().IsClosed()
		}
		return nil
	})
	return isClosed
}

// ConnOf returns the connection a transaction begun by InTx on PostgreSQL
// runs on, while fn runs; nil for any other transaction.
func (db *DB) ConnOf(tx *sql.Tx) *sql.Conn {
	if c, ok := db.txConns.Load(tx); ok {
		return c.(*sql.Conn)
	}
	return nil
}

// RelaxedCommit is a WITH item for a single PostgreSQL statement whose own
// transaction may commit without waiting for the WAL flush: set_config's
// third argument keeps the setting to that transaction, so the
// connection's later statements commit durably as before. The statement
// must read from it ("FROM …, relaxed") for it to run. The commit is made
// and seen by every other transaction at once and reaches disk within
// about 200 ms (wal_writer_delay); only a crash of the database server in
// that window loses it, and a later durable commit on any connection
// flushes it with its own. Use it only for writes whose loss the service
// already recovers from, and say how at the call.
const RelaxedCommit = `relaxed AS (SELECT set_config('synchronous_commit', 'off', true) AS off)`

// InSnapshot runs fn in a read-only transaction that sees one consistent
// state across its queries (a list and its details read apart could
// otherwise straddle a write). On SQLite it is a read transaction of a
// reader connection (WAL gives it a snapshot); the writer's transactions
// begin IMMEDIATE, taking the write lock, so a snapshot there waited for
// the writer and its lock like any write. On PostgreSQL it takes
// REPEATABLE READ.
func (db *DB) InSnapshot(ctx context.Context, fn func(tx *sql.Tx) error) error {
	opts := &sql.TxOptions{}
	if db.Dialect == Postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := db.Reader().BeginTx(ctx, opts)
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
