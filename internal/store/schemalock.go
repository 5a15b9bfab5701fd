package store

import (
	"context"
	"fmt"
)

// schemaLockKey is the PostgreSQL advisory lock that momopay processes
// take while they change the schema ("momopay" in ASCII).
const schemaLockKey = 0x6d6f6d6f706179

// LockSchema serialises schema migrations between processes: several
// instances starting at once on a new or older database would otherwise
// run the same migration side by side, and all but one fail half-way
// (PostgreSQL refuses the second CREATE TABLE of a type). On PostgreSQL it
// holds an advisory lock on one connection of the pool until unlock; the
// instances that wait find the migrations applied and apply none. SQLite
// needs none: its migrations take the one write lock.
func (db *DB) LockSchema(ctx context.Context) (unlock func(), err error) {
	if db.Dialect != Postgres {
		return func() {}, nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock the schema for migrations: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(schemaLockKey)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("lock the schema for migrations: %w", err)
	}
	return func() {
		// Closing the connection would end the session, and the lock with
		// it, only when the pool drops it: unlock explicitly.
		conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(schemaLockKey))
		conn.Close()
	}, nil
}
