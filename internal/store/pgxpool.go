package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// OpenPool opens a pgx pool of at most maxConns connections to the same
// PostgreSQL database as db. The job workers use it: River's pgx driver
// LISTENs for new jobs on a connection of its own, which database/sql
// cannot offer, so a job starts as soon as the transaction that inserted
// it commits instead of at the next poll. The pool connects lazily and
// must be closed by the caller.
func (db *DB) OpenPool(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	if db.Dialect != Postgres {
		return nil, errors.New("a pgx pool needs PostgreSQL")
	}
	cfg, err := pgPoolConfig(db.pgTarget, maxConns)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL connection string %s: %w", Redact(db.pgTarget), unquoted(err))
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}
