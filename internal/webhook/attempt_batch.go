package webhook

import (
	"context"
	"database/sql"
	"time"

	"github.com/momopay/momopay/internal/store"
)

// Concurrent attempts share their statements (store.Batcher): every
// webhook worker of the process that reaches the same step (read the
// delivery, claim it, record the outcome) while the previous statement of
// that step runs joins the next one. A drain used to cost three round
// trips (PostgreSQL) or two transactions (SQLite) per delivery, and the
// database was the limit; under load a batch takes dozens of attempts. An
// idle service runs each statement at once, alone, as before.
//
// On PostgreSQL a batch is one statement over arrays (attempt_pg.go). On
// SQLite, whose statements are in-process calls, a batch is one
// transaction running each attempt's own statements (claimTx, finishTx):
// what it saves is the commits, and the single writer's turns. Either
// way, each input keeps its own conditions, so a batch changes who shares
// the work, not what any attempt may do.

// maxBatch bounds the inputs of one batch: more than the workers of a
// process (so a full queue goes in one), few enough that the statement or
// transaction stays a few milliseconds.
const maxBatch = 200

// batches are the statements shared by concurrent attempts. load is nil
// on SQLite, where a read costs no round trip.
type batches struct {
	load   *store.Batcher[targetKey, *target]
	claim  *store.Batcher[claimInput, bool]
	finish *store.Batcher[finishInput, struct{}]
}

// claimInput is one claim: attempt c of delivery d as its caller read it,
// leased until lease. retryAt, unless zero, becomes the delivery's
// next_attempt_at: when the next automatic attempt is due should this
// one's process die during it. Only a claim that takes over a dead
// process's attempt sets it (claimTx), never a batched one (claimMany).
type claimInput struct {
	d       *target
	c       *claimed
	lease   time.Time
	retryAt time.Time
}

// finishInput is one finish: the outcome of claimed attempt c of d, and
// the delivery's new state.
type finishInput struct {
	d         *target
	c         *claimed
	a         *DeliveryAttempt
	state     DeliveryState
	next, now time.Time
}

func (s *Service) newBatches() *batches {
	db := s.db
	if db.Dialect == store.Postgres {
		return &batches{
			load:   store.NewBatcher(maxBatch, func(ctx context.Context, in []targetKey) ([]*target, error) { return loadTargets(ctx, db, in) }),
			claim:  store.NewBatcher(maxBatch, func(ctx context.Context, in []claimInput) ([]bool, error) { return claimMany(ctx, db, in) }),
			finish: store.NewBatcher(maxBatch, func(ctx context.Context, in []finishInput) ([]struct{}, error) { return finishMany(ctx, db, in) }),
		}
	}
	return &batches{
		claim: store.NewBatcher(maxBatch, store.EachInTx(db, s.claimTx)),
		finish: store.NewBatcher(maxBatch, store.EachInTx(db, func(ctx context.Context, tx *sql.Tx, x finishInput) (struct{}, error) {
			return struct{}{}, s.finishTx(ctx, tx, x)
		})),
	}
}
