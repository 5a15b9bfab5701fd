package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// concurrently runs each call at once and returns their errors. On
// SQLite it holds the one writer connection until every call waits for a
// batch (the first batch, taken by however many arrived before it
// started, waits for the writer), so that they commit in batches.
func concurrently(t *testing.T, db *store.DB, txs *store.Transactions, calls ...func() error) []error {
	t.Helper()
	hold, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
	}
	if db.Dialect == store.SQLite {
		for deadline := time.Now().Add(10 * time.Second); txs.PendingWrites() < len(calls); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				hold.Close()
				wg.Wait()
				t.Fatalf("%d of %d calls wait for a batch", txs.PendingWrites(), len(calls))
			}
		}
	}
	hold.Close()
	wg.Wait()
	return errs
}

// TestConcurrentCreates creates payments at once while the writer is
// held, so that on SQLite they queue and commit in batches, and checks
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

				var creates []func() error
				for _, tr := range batch {
					creates = append(creates, func() error { return txs.CreateTransaction(ctx, tr) })
				}
				errs := concurrently(t, db, txs, creates...)

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

// TestConcurrentSettlements takes pushes and settles payments at once
// while the writer is held, so that on SQLite each kind commits in
// batches, and checks what each left: every push is taken once; of two
// opposite outcomes for one payment, one settles it and the other is a
// late outcome with its case; a settlement of an unknown payment is
// ENOTFOUND; a settlement whose webhook outbox fails fails alone and
// leaves its payment PENDING; and the kept totals still count every
// payment under its status.
func TestConcurrentSettlements(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
		var trs []*payment.Transaction
		for i := range 12 {
			trs = append(trs, create(fmt.Sprintf("order-%d", i), now))
		}
		merchant, doomed := trs[0].MerchantID, trs[10].ID
		txs.OnSettled = func(_ context.Context, _ *sql.Tx, t *payment.Transaction) (bool, error) {
			if t.ID == doomed {
				return false, errors.New("refused by the test")
			}
			return false, nil
		}

		var pushes []func() error
		for i, tr := range append(trs, trs[0]) { // the first one twice
			pushes = append(pushes, func() error {
				return txs.PushTaken(ctx, merchant, tr.ID, "", payment.TransactionEvent{Kind: payment.EventPushAccepted, At: now.Add(time.Duration(i) * time.Millisecond), Status: payment.StatusPending})
			})
		}
		for i, err := range concurrently(t, db, txs, pushes...) {
			if err != nil {
				t.Fatalf("push %d: %v", i, err)
			}
		}

		type answer struct {
			changed bool
			status  payment.Status
		}
		answers := make([]answer, 13)
		var settles []func() error
		for i, id := range []string{trs[0].ID, trs[0].ID, trs[1].ID, trs[2].ID, trs[3].ID, trs[4].ID, trs[5].ID,
			trs[6].ID, trs[7].ID, trs[8].ID, trs[9].ID, doomed, uuid.Must(uuid.NewV7()).String()} {
			to := payment.StatusSuccess
			if i == 1 {
				to = payment.StatusFailed
			}
			settles = append(settles, func() error {
				tr, changed, err := txs.Settle(ctx, payment.Settlement{MerchantID: merchant, TransactionID: id, To: to,
					At: now.Add(time.Minute), Source: payment.SourceCallback, Reconcile: true})
				if err == nil {
					answers[i] = answer{changed, tr.Status}
				}
				return err
			})
		}
		errs := concurrently(t, db, txs, settles...)
		for i, err := range errs {
			switch {
			case i == 11:
				if err == nil || payment.ErrorCode(err) != payment.EINTERNAL {
					t.Fatalf("the settlement whose outbox fails: %v", err)
				}
			case i == 12:
				if !errors.Is(err, payment.ErrNotFound) {
					t.Fatalf("an unknown payment's settlement: %v", err)
				}
			case err != nil:
				t.Fatalf("settlement %d: %v", i, err)
			}
		}
		if answers[0].changed == answers[1].changed || answers[0].status != answers[1].status {
			t.Fatalf("two outcomes for one payment: %+v %+v", answers[0], answers[1])
		}
		for i := 2; i <= 10; i++ {
			if a := answers[i]; !a.changed || a.status != payment.StatusSuccess {
				t.Fatalf("settlement %d: %+v", i, a)
			}
		}

		// What each payment's timeline holds beyond its creation: its push
		// taken once, then its settlement's two steps (or, for the first,
		// a late outcome besides); none for the doomed settlement.
		for i, tr := range trs {
			var steps, cases int
			if err := db.QueryRowContext(ctx, `SELECT
				(SELECT COUNT(*) FROM transaction_events WHERE transaction_id = $1),
				(SELECT COUNT(*) FROM reconciliation_cases WHERE transaction_id = $1)`, tr.ID).Scan(&steps, &cases); err != nil {
				t.Fatal(err)
			}
			want, wantCases := 4, 0
			switch {
			case i == 0:
				want, wantCases = 6, 1
			case tr.ID == doomed, i == 11:
				want = 2
			}
			if steps != want || cases != wantCases {
				t.Fatalf("payment %d: %d steps, %d cases; want %d and %d", i, steps, cases, want, wantCases)
			}
		}
		got, err := txs.Transaction(ctx, merchant, doomed)
		if err != nil || got.Status != payment.StatusPending {
			t.Fatalf("the doomed settlement's payment: %+v %v", got, err)
		}
		rows, err := db.QueryContext(ctx, `SELECT t.status, t.n, COALESCE(k.n, 0) FROM
			(SELECT status, COUNT(*) AS n FROM transactions WHERE merchant_id = $1 GROUP BY status) t
			LEFT JOIN (SELECT status, SUM(count) AS n FROM transaction_daily_totals WHERE merchant_id = $1 GROUP BY status) k
			ON k.status = t.status`, merchant)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var status string
			var n, counted int
			if err := rows.Scan(&status, &n, &counted); err != nil {
				t.Fatal(err)
			}
			if n != counted {
				t.Fatalf("%s: %d payments, the totals count %d", status, n, counted)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	})
}
