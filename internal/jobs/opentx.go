package jobs

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// openTx is a pgx.Tx for a transaction that database/sql began and will end
// on the same connection: River's pgx driver inserts through it, and its
// statements (Exec, Query, QueryRow, CopyFrom, SendBatch, Prepare, promoted
// from the connection) run inside that transaction. Ending it, or nesting
// one, is refused: the transaction is its owner's (store.DB.InTx).
type openTx struct{ *pgxConn }

// pgxConn names pgx.Conn so that openTx can embed it and still have the
// Conn method pgx.Tx asks for.
type pgxConn = pgx.Conn

var errNotOurs = errors.New("jobs: this transaction belongs to database/sql; it is committed or rolled back there")

func (openTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNotOurs }
func (openTx) Commit(context.Context) error          { return errNotOurs }
func (openTx) Rollback(context.Context) error        { return errNotOurs }
func (openTx) LargeObjects() pgx.LargeObjects        { return pgx.LargeObjects{} }
func (t openTx) Conn() *pgx.Conn                     { return t.pgxConn }

var _ pgx.Tx = openTx{}
