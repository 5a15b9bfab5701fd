package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable reports whether err means the database could not be used
// just now, rather than that the query or the data is wrong: PostgreSQL
// unreachable, restarting, out of connections, refusing new ones, or a
// connection cut in the
// middle of a query; SQLite locked by another process for longer than the
// busy timeout. Such an error left nothing half-written (every write is one
// database transaction, which either committed or did not), and the same
// request can succeed once the database is back, so the API answers it
// with 503 and retry_after instead of 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	// First: a connection that could not be made is "not now" whatever
	// PostgreSQL said while refusing it (not accepting connections, no
	// such database, authentication failed): a PgError inside it would
	// otherwise be judged by the codes below, and answer 500.
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return unavailableSQLState(pgErr.Code)
	}
	if sqlErr, ok := errors.AsType[*sqlite.Error](err); ok {
		switch sqlErr.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED,
			sqlite3.SQLITE_FULL: // the disk: writes succeed once space is made, and nothing was half-written
			return true
		}
		return false
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgconn marks the errors it raised before anything reached the server
	// (a connection already closed, most often) as safe to retry.
	if pgconn.SafeToRetry(err) {
		return true
	}
	// pgx reports a connection that died under it in words only.
	return strings.Contains(err.Error(), "conn closed")
}

// unavailableSQLState picks the PostgreSQL error codes that say "not now"
// rather than "not this": the server is shutting down or starting, has no
// connection slot left, lost the connection, or gave up a transaction to a
// concurrent one (which rolled it back, so retrying is safe).
func unavailableSQLState(code string) bool {
	switch code {
	case "57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now: starting up or in recovery
		"53300", // too_many_connections
		"53100", // disk_full: no write can succeed until space is made
		"53200", // out_of_memory
		"40001", // serialization_failure
		"40P01": // deadlock_detected
		return true
	}
	return strings.HasPrefix(code, "08") // connection_exception
}

// sqliteBusy reports SQLite's answer when another connection holds the
// write lock past the busy timeout.
func sqliteBusy(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	return ok && e.Code()&0xff == sqlite3.SQLITE_BUSY
}
