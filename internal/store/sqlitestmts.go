package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
)

// sqliteStmtsPerConn bounds the prepared statements each SQLite
// connection keeps. The service runs a few dozen distinct statements
// (its own and River's); the list's filter combinations add some more.
// Past the bound the least recently used is finalized.
const sqliteStmtsPerConn = 128

// stmtCache is a driver.Connector that gives each SQLite connection a
// cache of prepared statements, keyed by their text.
//
// database/sql prepares, runs and finalizes a statement for every query
// that is not explicitly prepared, and SQLite compiles SQL in the calling
// process: the profiles put a fifth of a get's CPU and of a create's in
// SQLite's parser and code generator (sqlite3Prepare), compiling the same
// few statements again and again. PostgreSQL needs none of this: pgx
// already keeps each connection's statements prepared.
//
// The driver's own prepared statement is reused as is: its Query resets
// the statement when the rows are closed instead of finalizing it, and its
// Exec resets it once done. A statement whose rows are still open (a
// query run again with the same text inside the loop over its rows) is
// busy, and that query is run the uncached way.
type stmtCache struct {
	driver.Connector
}

// Connect opens a connection and wraps it with its cache.
func (c stmtCache) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	// What database/sql needs of a connection, all of which
	// modernc.org/sqlite's offers.
	inner, ok := conn.(cachedConnInner)
	if !ok {
		conn.Close()
		return nil, errors.New("store: the SQLite driver's connection lacks an interface the statement cache needs")
	}
	return &cachedConn{inner: inner, byText: map[string]*list.Element{}, lru: list.New()}, nil
}

// cachedConnInner is what cachedConn forwards to.
type cachedConnInner interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachedConn is one SQLite connection and its statements. database/sql
// uses a connection from one goroutine at a time (a transaction's calls,
// rows' Close included, hold the connection's lock), so it needs no lock
// of its own.
type cachedConn struct {
	inner  cachedConnInner
	byText map[string]*list.Element // of *cachedStmt, in lru
	lru    *list.List               // most recently used first
}

// cachedStmt is a prepared statement and whether rows of it are open.
type cachedStmt struct {
	text string
	stmt preparedStmt
	busy bool
	// evicted says the cache let go of the statement while it was busy:
	// its rows finalize it.
	evicted bool
}

// preparedStmt is what the cache needs of the driver's statement.
type preparedStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// statement returns the connection's prepared statement for text,
// preparing it on first use; nil if it is busy or cannot be prepared
// for reuse, in which case the caller runs the query uncached (and so
// reports a syntax error the way the driver does).
func (c *cachedConn) statement(ctx context.Context, text string) *cachedStmt {
	if e, ok := c.byText[text]; ok {
		c.lru.MoveToFront(e)
		if s := e.Value.(*cachedStmt); !s.busy {
			return s
		}
		return nil
	}
	prepared, err := c.inner.PrepareContext(ctx, text)
	if err != nil {
		return nil
	}
	stmt, ok := prepared.(preparedStmt)
	if !ok {
		prepared.Close()
		return nil
	}
	s := &cachedStmt{text: text, stmt: stmt}
	c.byText[text] = c.lru.PushFront(s)
	for c.lru.Len() > sqliteStmtsPerConn {
		c.evict(c.lru.Back())
	}
	return s
}

// evict finalizes e's statement and forgets it. A busy statement is only
// forgotten: its rows finalize it when they close.
func (c *cachedConn) evict(e *list.Element) {
	s := c.lru.Remove(e).(*cachedStmt)
	delete(c.byText, s.text)
	if s.busy {
		s.evicted = true
		return
	}
	s.stmt.Close()
}

// QueryContext runs query on the connection's prepared statement for it.
func (c *cachedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s := c.statement(ctx, query)
	if s == nil {
		return c.inner.QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.busy = true
	return &cachedRows{Rows: rows, stmt: s}, nil
}

// ExecContext runs query on the connection's prepared statement for it.
func (c *cachedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s := c.statement(ctx, query)
	if s == nil {
		return c.inner.ExecContext(ctx, query, args)
	}
	return s.stmt.ExecContext(ctx, args)
}

// Close finalizes the statements, then closes the connection.
func (c *cachedConn) Close() error {
	for c.lru.Len() > 0 {
		c.evict(c.lru.Front())
	}
	return c.inner.Close()
}

// The rest is the driver's.

func (c *cachedConn) Prepare(query string) (driver.Stmt, error) { return c.inner.Prepare(query) }
func (c *cachedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.inner.PrepareContext(ctx, query)
}
func (c *cachedConn) Begin() (driver.Tx, error) { return c.inner.Begin() } //nolint:staticcheck // driver.Conn requires it
func (c *cachedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner.BeginTx(ctx, opts)
}
func (c *cachedConn) Ping(ctx context.Context) error         { return c.inner.Ping(ctx) }
func (c *cachedConn) ResetSession(ctx context.Context) error { return c.inner.ResetSession(ctx) }
func (c *cachedConn) IsValid() bool                          { return c.inner.IsValid() }

// cachedRows are a cached statement's rows: closing them resets the
// statement (the driver's doing) and frees it for the next query.
type cachedRows struct {
	driver.Rows
	stmt   *cachedStmt
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Rows.Close()
	r.stmt.busy = false
	if r.stmt.evicted {
		r.stmt.stmt.Close()
	}
	return err
}
