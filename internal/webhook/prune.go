package webhook

import (
	"context"
	"database/sql"
	"time"

	"github.com/momopay/momopay/internal/store"
)

// pruneBatch is how many deliveries one transaction of Prune deletes: small
// enough that it holds their rows (or SQLite's writer) for milliseconds
// (BenchmarkPrune: about 11 ms on SQLite, 3 ms on PostgreSQL), so
// settlements and attempts go on while a large history is pruned. Batches
// of 500 deleted no faster and held SQLite's writer 55 ms each.
var pruneBatch = 100

// Prune deletes the history of deliveries that are over, with their
// attempts: delivered and undelivered ones (test events included) created
// before cutoff and not changed since. A pending delivery is never
// deleted, however old, since it still has attempts to make; nor is one a
// person re-sent since cutoff, which was changed then. merchantID limits
// it to one merchant; "" prunes every merchant's. It returns how many
// deliveries it deleted or, with dryRun, would delete.
//
// Why: nothing else ever deletes a delivery, and a payment leaves one per
// endpoint and event, with up to five attempts each (about 13 KB with 20
// endpoints). Pruning is the operator's choice of how long merchants can
// read and re-send their history (momopay webhook prune, run from cron).
func (s *Service) Prune(ctx context.Context, merchantID string, cutoff time.Time, dryRun bool) (int, error) {
	merchants := []string{merchantID}
	if merchantID == "" {
		var err error
		if merchants, err = scanIDs(s.db.QueryContext(ctx, `SELECT id FROM merchants ORDER BY id`)); err != nil {
			return 0, err
		}
	}
	total := 0
	for _, m := range merchants {
		n, err := s.pruneMerchant(ctx, m, cutoff, dryRun)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// prunable selects a merchant's deliveries that Prune may delete ($1 the
// merchant, $2 the cutoff), oldest first through the merchant's index by
// creation time.
const prunable = `FROM webhook_deliveries WHERE merchant_id = $1 AND created_at < $2
	AND state <> 'pending' AND updated_at < $2 AND (lease_until IS NULL OR lease_until < $2)`

// pruneMerchant prunes one merchant's deliveries, pruneBatch per
// transaction.
func (s *Service) pruneMerchant(ctx context.Context, merchantID string, cutoff time.Time, dryRun bool) (int, error) {
	if dryRun {
		var n int
		err := s.db.QueryRowContext(ctx, `SELECT count(*) `+prunable, merchantID, s.db.Time(cutoff)).Scan(&n)
		return n, err
	}
	// On PostgreSQL the selected rows stay locked until the batch commits:
	// a re-send that comes meanwhile waits, then finds no delivery; one
	// that came first changed updated_at, and the row no longer matches.
	lock := ""
	if s.db.Dialect == store.Postgres {
		lock = " FOR UPDATE"
	}
	total := 0
	for {
		var ids []string
		err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			var err error
			ids, err = scanIDs(tx.QueryContext(ctx, `SELECT id `+prunable+` ORDER BY created_at LIMIT $3`+lock,
				merchantID, s.db.Time(cutoff), pruneBatch))
			if err != nil || len(ids) == 0 {
				return err
			}
			// By id alone: the ids are the merchant's, selected in this
			// transaction. (With merchant_id = $1 too, SQLite's planner
			// read the merchant's whole history by its merchant index
			// for each batch instead of looking up its ids.)
			if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE `+s.in("delivery_id", 1), s.idList(ids)); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE `+s.in("id", 1), s.idList(ids))
			return err
		})
		if err != nil {
			return total, err
		}
		total += len(ids)
		if len(ids) < pruneBatch {
			return total, nil
		}
	}
}
