package paymenttest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// testListTransactions: "ListTransactions returns one page, newest first,
// with the true total", of the merchant's transactions whose push is no
// longer in flight (ListFilter: From and To bound created_at inclusively).
// Each clause opens its own fixture: a list is the merchant's whole
// history.
func testListTransactions(t *testing.T, start func(t *testing.T) *suite) {
	all := payment.ListFilter{Page: 1, PerPage: 100}

	// A transaction whose push is in flight may yet be deleted (its push
	// refused), so it is never shown; it is once its push is taken or it
	// is settled, and a deleted one is gone.
	t.Run("InFlightPushesAreNotListed", func(t *testing.T) {
		s := start(t)
		s.create(t, s.Merchant, base) // stays in flight
		taken := s.taken(t, s.create(t, s.Merchant, base.Add(time.Second)), "")
		settled := s.settled(t, s.create(t, s.Merchant, base.Add(2*time.Second)), payment.StatusSuccess, base.Add(time.Minute))
		deleted := s.create(t, s.Merchant, base.Add(3*time.Second))
		if ok, err := s.Store.DeleteTransaction(t.Context(), s.Merchant, deleted.ID); err != nil || !ok {
			t.Fatalf("DeleteTransaction: %v %v", ok, err)
		}
		s.listsExactly(t, s.Merchant, all, settled, taken)
	})

	// Newest first by created_at, whatever the order of the inserts, and
	// each listed transaction is the transaction, field for field.
	t.Run("NewestFirst", func(t *testing.T) {
		s := start(t)
		byTime := map[int]*payment.Transaction{}
		for _, sec := range []int{3, 0, 4, 1, 2} {
			byTime[sec] = s.taken(t, s.create(t, s.Merchant, base.Add(time.Duration(sec)*time.Second)), "")
		}
		s.listsExactly(t, s.Merchant, all, byTime[4], byTime[3], byTime[2], byTime[1], byTime[0])
	})

	// Every filter and their combinations give the exact total, with the
	// page holding exactly the matching transactions, newest first.
	// Bounds are inclusive and exact to the nanosecond they are given at
	// (times are kept to the microsecond). The merchant's transactions in
	// flight, its deleted one, and another merchant's at the same instants
	// never count.
	t.Run("ExactTotalWithFilters", func(t *testing.T) {
		s := start(t)
		rows := []struct {
			at time.Duration
			op payment.Operator
			to payment.Status // PENDING: push taken, not settled
		}{
			{0, payment.OperatorAirtel, payment.StatusSuccess},
			{time.Second, payment.OperatorMoov, payment.StatusFailed},
			{2 * time.Second, payment.OperatorAirtel, payment.StatusPending},
			{3 * time.Second, payment.OperatorMoov, payment.StatusSuccess},
			{3*time.Second + time.Microsecond, payment.OperatorAirtel, payment.StatusTimeout},
			{time.Hour, payment.OperatorMoov, payment.StatusExpired},
			{time.Hour + time.Microsecond, payment.OperatorAirtel, payment.StatusPending},
			{25 * time.Hour, payment.OperatorAirtel, payment.StatusSuccess},
		}
		at := func(i int) time.Time { return base.Add(rows[i].at) }
		var model []*payment.Transaction
		for i, r := range rows {
			for _, m := range []string{s.Merchant, s.Other} {
				tr := s.pending(m, at(i))
				tr.Operator = r.op
				if err := s.Store.CreateTransaction(t.Context(), tr); err != nil {
					t.Fatal(err)
				}
				tr = s.taken(t, tr, "")
				switch r.to {
				case payment.StatusPending:
				case payment.StatusExpired:
					tr = s.settled(t, tr, r.to, tr.ExpiresAt)
				default:
					tr = s.settled(t, tr, r.to, at(i).Add(time.Minute))
				}
				if m == s.Merchant {
					model = append(model, tr)
				}
			}
			inFlight := s.pending(s.Merchant, at(i))
			inFlight.Operator = r.op
			if err := s.Store.CreateTransaction(t.Context(), inFlight); err != nil {
				t.Fatal(err)
			}
		}
		deleted := s.create(t, s.Merchant, at(3))
		if ok, err := s.Store.DeleteTransaction(t.Context(), s.Merchant, deleted.ID); err != nil || !ok {
			t.Fatalf("DeleteTransaction: %v %v", ok, err)
		}

		for _, c := range []struct {
			name string
			f    payment.ListFilter
		}{
			{"no filter", payment.ListFilter{}},
			{"status SUCCESS", payment.ListFilter{Status: payment.StatusSuccess}},
			{"status PENDING", payment.ListFilter{Status: payment.StatusPending}},
			{"status EXPIRED", payment.ListFilter{Status: payment.StatusExpired}},
			{"operator MOOV", payment.ListFilter{Operator: payment.OperatorMoov}},
			{"status and operator", payment.ListFilter{Status: payment.StatusSuccess, Operator: payment.OperatorMoov}},
			{"from a row is inclusive", payment.ListFilter{From: at(3)}},
			{"to a row is inclusive", payment.ListFilter{To: at(3)}},
			{"from and to on one row", payment.ListFilter{From: at(4), To: at(4)}},
			{"from a nanosecond after a row", payment.ListFilter{From: at(3).Add(time.Nanosecond)}},
			{"to a nanosecond after a row", payment.ListFilter{To: at(3).Add(time.Nanosecond)}},
			{"to a nanosecond before a row", payment.ListFilter{To: at(4).Add(-time.Nanosecond)}},
			{"across days", payment.ListFilter{From: base.Add(30 * time.Minute), To: base.Add(26 * time.Hour)}},
			{"every filter", payment.ListFilter{Status: payment.StatusPending, Operator: payment.OperatorAirtel, From: at(1), To: at(6)}},
			{"nothing matches", payment.ListFilter{Status: payment.StatusTimeout, Operator: payment.OperatorMoov}},
			{"from after to", payment.ListFilter{From: at(5), To: at(0)}},
		} {
			t.Run(c.name, func(t *testing.T) {
				want := matching(model, c.f)
				if len(want) == 0 && c.name != "nothing matches" && c.name != "from after to" {
					t.Fatal("the filter matches nothing: the case tests nothing")
				}
				f := c.f
				f.Page, f.PerPage = 1, 100
				s.listsExactly(t, s.Merchant, f, want...)
				// Short pages still count every match.
				f.PerPage = 2
				for f.Page = 1; f.Page <= 2; f.Page++ {
					from, to := min(2*(f.Page-1), len(want)), min(2*f.Page, len(want))
					s.lists(t, s.Merchant, f, len(want), want[from:to]...)
				}
			})
		}
	})

	// Pages split the list without overlap or gap, ties of created_at
	// included; a page past the end is empty and still has the total.
	t.Run("PagesPartitionTheList", func(t *testing.T) {
		s := start(t)
		for _, sec := range []int{0, 1, 1, 2, 3, 3, 3} {
			s.taken(t, s.create(t, s.Merchant, base.Add(time.Duration(sec)*time.Second)), "")
		}
		whole := s.list(t, s.Merchant, all)
		if whole.Total != 7 || len(whole.Transactions) != 7 {
			t.Fatalf("the whole list: total %d, %d transactions; want 7", whole.Total, len(whole.Transactions))
		}
		for i := 1; i < len(whole.Transactions); i++ {
			if whole.Transactions[i].CreatedAt.After(whole.Transactions[i-1].CreatedAt) {
				t.Errorf("transaction %d is newer than the one before it", i)
			}
		}
		var paged []string
		for page, size := range []int{3, 3, 1, 0} {
			got := s.list(t, s.Merchant, payment.ListFilter{Page: page + 1, PerPage: 3})
			if got.Total != 7 || len(got.Transactions) != size {
				t.Errorf("page %d: total %d, %d transactions; want 7 and %d", page+1, got.Total, len(got.Transactions), size)
			}
			paged = append(paged, ids(got.Transactions)...)
		}
		if want := ids(whole.Transactions); !slices.Equal(paged, want) {
			t.Errorf("pages of 3 hold\n%v\nthe whole list\n%v", paged, want)
		}
	})

	// Each merchant lists its own transactions only, references shared.
	t.Run("OnlyTheMerchantsOwn", func(t *testing.T) {
		s := start(t)
		var mine, theirs []*payment.Transaction
		for i := range 3 {
			at := base.Add(time.Duration(i) * time.Second)
			tr := s.taken(t, s.create(t, s.Merchant, at), "")
			mine = append([]*payment.Transaction{tr}, mine...)
			if i < 2 {
				other := s.pending(s.Other, at)
				other.Reference = tr.Reference
				if err := s.Store.CreateTransaction(t.Context(), other); err != nil {
					t.Fatal(err)
				}
				theirs = append([]*payment.Transaction{s.taken(t, other, "")}, theirs...)
			}
		}
		s.listsExactly(t, s.Merchant, all, mine...)
		s.listsExactly(t, s.Other, all, theirs...)
	})
}

// matching is the list's meaning applied to model, which is in created_at
// order with no two at one instant: the transactions f matches, newest
// first.
func matching(model []*payment.Transaction, f payment.ListFilter) []*payment.Transaction {
	var out []*payment.Transaction
	for _, tr := range slices.Backward(model) {
		if (f.Status == "" || tr.Status == f.Status) && (f.Operator == "" || tr.Operator == f.Operator) &&
			(f.From.IsZero() || !tr.CreatedAt.Before(f.From)) && (f.To.IsZero() || !tr.CreatedAt.After(f.To)) {
			out = append(out, tr)
		}
	}
	return out
}

// list returns a page of the merchant's list, which must not fail.
func (s *suite) list(t *testing.T, merchant string, f payment.ListFilter) *payment.Page {
	t.Helper()
	page, err := s.Store.ListTransactions(t.Context(), merchant, f)
	if err != nil {
		t.Fatalf("ListTransactions(%+v): %v", f, err)
	}
	return page
}

// lists checks that page f of the merchant's list has total and holds
// want, in order and field for field.
func (s *suite) lists(t *testing.T, merchant string, f payment.ListFilter, total int, want ...*payment.Transaction) {
	t.Helper()
	page := s.list(t, merchant, f)
	if page.Total != total {
		t.Errorf("page %d of %d: total %d, want %d", f.Page, f.PerPage, page.Total, total)
	}
	got := ids(page.Transactions)
	var wantIDs []string
	for _, tr := range want {
		wantIDs = append(wantIDs, tr.ID)
	}
	if !slices.Equal(got, wantIDs) {
		t.Fatalf("page %d of %d holds\n%v\nwant\n%v", f.Page, f.PerPage, got, wantIDs)
	}
	for i := range page.Transactions {
		same(t, fmt.Sprintf("listed transaction %d", i), &page.Transactions[i], want[i])
	}
}

// listsExactly checks that the page holds every match, want.
func (s *suite) listsExactly(t *testing.T, merchant string, f payment.ListFilter, want ...*payment.Transaction) {
	t.Helper()
	s.lists(t, merchant, f, len(want), want...)
}

func ids(trs []payment.Transaction) []string {
	out := []string{}
	for _, tr := range trs {
		out = append(out, tr.ID)
	}
	return out
}
