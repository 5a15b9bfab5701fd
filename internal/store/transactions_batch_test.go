package store_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// TestConcurrentCreates creates payments at once while the writer is
// held, so that on SQLite they queue and commit as one batch, and checks
// each one's answer: every create commits whole (row, first step, two
// jobs, count in the totals); of two creates with one reference, one wins
// and the other names it; of two with one internal_ref, one is asked to
// draw again; and a create the database refuses for another reason fails
// alone, leaving nothing of itself, while the others commit. On
// PostgreSQL, which does not batch, the same answers hold.
func TestConcurrentCreates(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
		first := create("order-0", now)
		merchant := first.MerchantID

		// The timeline refuses one payment's first step: an error after
		// its row was inserted, which must roll the row back too.
		doomed := uuid.Must(uuid.NewV7()).String()
		exec := func(q string) {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if db.Dialect == store.SQLite {
			exec(`CREATE TRIGGER refuse_one BEFORE INSERT ON transaction_events
				WHEN NEW.transaction_id = '` + doomed + `' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
		} else {
			exec(`CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'refused by the test'; END $$`)
			exec(`CREATE TRIGGER refuse_one BEFORE INSERT ON transaction_events FOR EACH ROW
				WHEN (NEW.transaction_id = '` + doomed + `') EXECUTE FUNCTION refuse_one()`)
		}

		for _, withDoomed := range []bool{false, true} {
			t.Run(fmt.Sprintf("doomed=%v", withDoomed), func(t *testing.T) {
				tag := fmt.Sprint(withDoomed)
				var batch []*payment.Transaction
				for i := range 20 {
					tr := *first
					tr.ID = uuid.Must(uuid.NewV7()).String()
					tr.Reference = fmt.Sprintf("order-%s-%d", tag, i)
					tr.InternalRef = "SERVICE-" + uuid.NewString()[:8]
					batch = append(batch, &tr)
				}
				batch[1].Reference = batch[0].Reference     // one reference, two payments
				batch[3].InternalRef = batch[2].InternalRef // one internal_ref, two payments
				if withDoomed {
					batch[4].ID = doomed
				}

				// On SQLite the one writer connection is held: the first
				// create waits for it, the others queue behind it.
				hold, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				errs := make([]error, len(batch))
				var wg sync.WaitGroup
				for i, tr := range batch {
					wg.Go(func() { errs[i] = txs.CreateTransaction(ctx, tr) })
				}
				if db.Dialect == store.SQLite {
					for txs.QueuedCreates() < len(batch)-1 {
						time.Sleep(time.Millisecond)
					}
				}
				hold.Close()
				wg.Wait()

				created := map[string]bool{}
				for i, err := range errs {
					switch {
					case i <= 1 && err != nil:
						e, ok := errors.AsType[*payment.Error](err)
						if !ok || e.Code != payment.EDUPLICATE || e.ExistingTransactionID != batch[1-i].ID {
							t.Fatalf("create %d, reference taken by %s: %v", i, batch[1-i].ID, err)
						}
					case i == 2 || i == 3:
						if err != nil && !errors.Is(err, payment.ErrInternalRefTaken) {
							t.Fatalf("create %d, internal_ref shared: %v", i, err)
						}
					case i == 4 && withDoomed:
						if err == nil || payment.ErrorCode(err) != payment.EINTERNAL {
							t.Fatalf("the refused create: %v", err)
						}
					case err != nil:
						t.Fatalf("create %d: %v", i, err)
					}
					if err == nil {
						created[batch[i].ID] = true
					}
				}
				if (errs[0] == nil) == (errs[1] == nil) || (errs[2] == nil) == (errs[3] == nil) {
					t.Fatalf("of each pair exactly one is created: %v", errs[:4])
				}
				if want := len(batch) - 2 - map[bool]int{false: 0, true: 1}[withDoomed]; len(created) != want {
					t.Fatalf("%d created, want %d", len(created), want)
				}
				for _, tr := range batch {
					var rows, steps int
					if err := db.QueryRowContext(ctx, `SELECT
						(SELECT COUNT(*) FROM transactions WHERE id = $1),
						(SELECT COUNT(*) FROM transaction_events WHERE transaction_id = $1)`, tr.ID).Scan(&rows, &steps); err != nil {
						t.Fatal(err)
					}
					want := 0
					if created[tr.ID] {
						want = 1
					}
					if rows != want || steps != want || jobsOf(t, db, tr.ID) != 2*want {
						t.Fatalf("%s (created %v): %d rows, %d steps, %d jobs", tr.ID, created[tr.ID], rows, steps, jobsOf(t, db, tr.ID))
					}
				}
			})
		}
		// The totals count every payment created, and nothing else.
		var counted, rows int
		if err := db.QueryRowContext(ctx, `SELECT
			(SELECT SUM(count) FROM transaction_daily_totals WHERE merchant_id = $1),
			(SELECT COUNT(*) FROM transactions WHERE merchant_id = $1)`, merchant).Scan(&counted, &rows); err != nil {
			t.Fatal(err)
		}
		if counted != rows || rows != 1+18+17 {
			t.Fatalf("totals count %d payments, the table holds %d, want %d", counted, rows, 1+18+17)
		}
	})
}
