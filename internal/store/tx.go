package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5/stdlib"
)

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
