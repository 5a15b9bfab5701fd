package store_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// wat is N'Djamena time (UTC+1), the zone of the kept totals' days.
var wat = time.FixedZone("WAT", 60*60)

// TestListMatchesCount: the list's total and pages, which come from the
// kept daily totals, the in-flight rows and the edge days, are exactly
// those of counting and paging every matching row. The merchant's
// transactions lie on many days and on the edges of days (N'Djamena's
// midnight, a microsecond either side, the last millisecond of a day), have every status and both operators, and went through the real
// paths: created in flight, taken, settled (in flight or after), refused
// (deleted) or left in flight. Filters cut days anywhere, on their edges
// or not at all, and pages run from the first past the last.
func TestListMatchesCount(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		merchant := create("first", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)).MerchantID
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 11))

		// Another merchant's rows on the same days must never count.
		other, err := store.NewMerchants(db).Create(ctx, "Other", uuid.NewString()+"@example.td", "correct horse battery", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		first := time.Date(2026, 3, 1, 0, 0, 0, 0, wat)
		const days = 40
		var instants []time.Time // where rows are, for filters to hit exactly
		n := 0
		for d := range days {
			if rng.IntN(8) == 0 {
				continue // a day without transactions
			}
			midnight := first.AddDate(0, 0, d)
			for range 3 + rng.IntN(15) {
				at := midnight.Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))).Truncate(time.Microsecond)
				if rng.IntN(3) == 0 {
					at = midnight.Add(edgeOffsets[rng.IntN(len(edgeOffsets))])
				}
				instants = append(instants, at)
				n++
				op := []payment.Operator{payment.OperatorAirtel, payment.OperatorMoov}[rng.IntN(2)]
				merchantID := merchant
				if rng.IntN(10) == 0 {
					merchantID = other.ID
				}
				tr := newPending(t, txs, merchantID, fmt.Sprintf("order-%d", n), op, at)
				lifecycle(t, txs, tr, rng)
			}
			if rng.IntN(2) == 0 {
				// In flight in the day's last instants, which the totals
				// count in this day and the list must take out of it.
				n++
				at := midnight.Add(edgeOffsets[1+rng.IntN(len(edgeOffsets)-1)])
				instants = append(instants, at)
				newPending(t, txs, merchant, fmt.Sprintf("order-%d", n), payment.OperatorMoov, at)
			}
		}

		// Filter bounds: none, day edges, a microsecond off them, a row's
		// own instant, anywhere (to the nanosecond), and the extremes.
		bound := func() time.Time {
			switch rng.IntN(6) {
			case 0:
				return time.Time{}
			case 1:
				return first.AddDate(0, 0, rng.IntN(days+2)-1).Add(edgeOffsets[rng.IntN(len(edgeOffsets))])
			case 2:
				return instants[rng.IntN(len(instants))]
			case 3:
				return first.Add(time.Duration(rng.Int64N(int64(days * 24 * time.Hour))))
			case 4:
				return []time.Time{payment.MinFilterTime, payment.MaxFilterTime, first.AddDate(-1, 0, 0), first.AddDate(1, 0, 0)}[rng.IntN(4)]
			}
			return first.AddDate(0, 0, rng.IntN(days)).Add(-time.Microsecond) // the last microsecond of a day
		}
		statuses := []payment.Status{"", payment.StatusPending, payment.StatusSuccess, payment.StatusFailed, payment.StatusTimeout, payment.StatusExpired}
		operators := []payment.Operator{"", payment.OperatorAirtel, payment.OperatorMoov}
		checked, nonEmpty := 0, 0
		for range 400 {
			f := payment.ListFilter{
				Page:     1,
				PerPage:  1 + rng.IntN(100),
				Status:   statuses[rng.IntN(len(statuses))],
				Operator: operators[rng.IntN(len(operators))],
				From:     bound(),
				To:       bound(),
			}
			if rng.IntN(4) == 0 {
				f.PerPage = 1 + rng.IntN(5) // many pages, to start deep in any day
			}
			total, _ := referencePage(t, db, merchant, f)
			if total > 0 {
				nonEmpty++
			}
			last := (total + f.PerPage - 1) / f.PerPage
			pages := []int{1, 2, max(1, last), last + 1, 1 + rng.IntN(last+1), 1 + rng.IntN(last+1), math.MaxInt / 2, math.MaxInt}
			if rng.IntN(20) == 0 {
				// Every page, one row each: a page starts on every day's
				// first and last row.
				f.PerPage, pages = 1, nil
				for p := range total + 1 {
					pages = append(pages, p+1)
				}
			}
			for _, p := range pages {
				f.Page = p
				want, wantIDs := referencePage(t, db, merchant, f)
				got, err := txs.ListTransactions(ctx, merchant, f)
				if err != nil {
					t.Fatalf("%s: %v", describe(f), err)
				}
				var gotIDs []string
				for _, tr := range got.Transactions {
					gotIDs = append(gotIDs, tr.ID)
				}
				if got.Total != want || !slices.Equal(gotIDs, wantIDs) {
					t.Fatalf("%s: total %d, want %d; page\n%v\nwant\n%v", describe(f), got.Total, want, gotIDs, wantIDs)
				}
				checked++
			}
		}
		// The filters did find rows, deep pages included.
		if nonEmpty < 100 || checked < 3000 {
			t.Fatalf("only %d of the filters matched anything (%d pages checked)", nonEmpty, checked)
		}
	})
}

// TestListPageAgreesWithItsTotal: while payments are created and their
// pushes taken, a page never holds more (or fewer) rows than its own
// total says. The readers list the minute the writers are filling, fewer
// rows than a page, so every page should hold its whole total. (Counted
// and read apart, a row taken between the two was on the page but not
// in the total: the audit saw it in about one PostgreSQL list in 80.)
func TestListPageAgreesWithItsTotal(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		merchant := create("first", time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)).MerchantID
		base := time.Date(2026, 5, 1, 12, 0, 0, 0, wat)
		const perMinute = 40
		minute := func(k int64) payment.ListFilter {
			from := base.Add(time.Duration(k) * time.Minute)
			return payment.ListFilter{Page: 1, PerPage: 100, From: from, To: from.Add(time.Minute - time.Microsecond)}
		}
		// The writers make a fixed number of payments, and the readers
		// list until they are done: no clock decides how much is checked.
		const payments = 240
		var made, lists, wrong atomic.Int64
		var writing sync.WaitGroup
		for w := range 3 {
			writing.Go(func() {
				for n := made.Add(1); n <= payments && !t.Failed(); n = made.Add(1) {
					at := minute(n / perMinute).From.Add(time.Duration(n%perMinute) * time.Millisecond)
					tr := pendingTx(merchant, fmt.Sprintf("w%d-%d", w, n), payment.OperatorAirtel, at)
					if err := txs.CreateTransaction(ctx, tr); err != nil {
						t.Error(err)
						return
					}
					if err := txs.PushTaken(ctx, merchant, tr.ID, "", payment.TransactionEvent{Kind: payment.EventPushAccepted, At: at, Status: payment.StatusPending}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		done := make(chan struct{})
		var reading sync.WaitGroup
		for range 2 {
			reading.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					page, err := txs.ListTransactions(ctx, merchant, minute(min(made.Load(), payments)/perMinute))
					if err != nil {
						t.Error(err)
						return
					}
					lists.Add(1)
					if len(page.Transactions) != page.Total && wrong.Add(1) == 1 {
						t.Errorf("a page of %d rows says its total is %d", len(page.Transactions), page.Total)
					}
				}
			})
		}
		writing.Wait()
		close(done)
		reading.Wait()
		t.Logf("%d payments, %d lists, %d of them disagreeing with their total", payments, lists.Load(), wrong.Load())
	})
}

// edgeOffsets place a row or a bound on (or just off) a day's start: its
// first microsecond, the previous day's last ones (to the microsecond, and
// within its last millisecond, which a date function rounding to the
// millisecond would put in the next day), and the next microsecond.
var edgeOffsets = []time.Duration{0, -time.Microsecond, -2 * time.Microsecond, -300 * time.Microsecond, -999 * time.Microsecond, time.Microsecond}

// newPending creates a transaction as the service does: PENDING, its push
// in flight.
func newPending(t *testing.T, txs *store.Transactions, merchantID, ref string, op payment.Operator, at time.Time) *payment.Transaction {
	t.Helper()
	tr := pendingTx(merchantID, ref, op, at)
	if err := txs.CreateTransaction(t.Context(), tr); err != nil {
		t.Fatalf("create %s: %v", ref, err)
	}
	return tr
}

// pendingTx is a new transaction as the service makes it: PENDING, its
// push in flight.
func pendingTx(merchantID, ref string, op payment.Operator, at time.Time) *payment.Transaction {
	return &payment.Transaction{
		ID: uuid.Must(uuid.NewV7()).String(), MerchantID: merchantID, Reference: ref,
		InternalRef: "SERVICE-L" + uuid.NewString()[:8], Amount: 1500, Currency: "XAF",
		Operator: op, PhoneNumber: "+23566000000", Status: payment.StatusPending,
		CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(5 * time.Minute), PushInFlight: true,
	}
}

// lifecycle takes tr down one of the paths a payment takes after its
// push is sent.
func lifecycle(t *testing.T, txs *store.Transactions, tr *payment.Transaction, rng *rand.Rand) {
	t.Helper()
	ctx := t.Context()
	taken := func() {
		if err := txs.PushTaken(ctx, tr.MerchantID, tr.ID, "", payment.TransactionEvent{Kind: payment.EventPushAccepted, At: tr.CreatedAt, Status: payment.StatusPending}); err != nil {
			t.Fatal(err)
		}
	}
	settle := func() {
		to := []payment.Status{payment.StatusSuccess, payment.StatusFailed, payment.StatusTimeout, payment.StatusExpired}[rng.IntN(4)]
		if _, changed, err := txs.Settle(ctx, payment.Settlement{MerchantID: tr.MerchantID, TransactionID: tr.ID, To: to,
			At: tr.ExpiresAt, Source: payment.SourcePoll}); err != nil || !changed {
			t.Fatalf("settle %s: %v %v", to, changed, err)
		}
	}
	switch r := rng.IntN(20); {
	case r < 2: // refused: deleted
		if deleted, err := txs.DeleteTransaction(ctx, tr.MerchantID, tr.ID); err != nil || !deleted {
			t.Fatalf("delete: %v %v", deleted, err)
		}
	case r < 4: // still in flight
	case r < 7: // taken, still PENDING
		taken()
	case r < 10: // settled while in flight (a callback before the push's answer)
		settle()
	default:
		taken()
		settle()
	}
}

// referencePage is the list's meaning, by brute force: count every
// matching row, then page them with OFFSET.
func referencePage(t testing.TB, db *store.DB, merchantID string, f payment.ListFilter) (int, []string) {
	t.Helper()
	where, args := []string{"merchant_id = $1", "NOT push_in_flight"}, []any{merchantID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Status != "" {
		add("status = $%d", string(f.Status))
	}
	if f.Operator != "" {
		add("operator = $%d", string(f.Operator))
	}
	if !f.From.IsZero() {
		add("created_at >= $%d", db.Time(f.From))
	}
	if !f.To.IsZero() {
		add("created_at <= $%d", db.Time(f.To))
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM transactions WHERE `+cond, args...).Scan(&total); err != nil {
		t.Fatal(err)
	}
	ids := referenceIDs(t.Context(), t, db, cond, args, f, total)
	return total, ids
}

func referenceIDs(ctx context.Context, t testing.TB, db *store.DB, cond string, args []any, f payment.ListFilter, total int) []string {
	if f.Page-1 >= (total+f.PerPage-1)/f.PerPage {
		return nil
	}
	args = append(args, f.PerPage, (f.Page-1)*f.PerPage)
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT id FROM transactions WHERE %s
		ORDER BY created_at DESC, id DESC LIMIT $%d OFFSET $%d`, cond, len(args)-1, len(args)), args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func describe(f payment.ListFilter) string {
	show := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.In(wat).Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("status=%q operator=%q from=%s to=%s page=%d per_page=%d",
		f.Status, f.Operator, show(f.From), show(f.To), f.Page, f.PerPage)
}
