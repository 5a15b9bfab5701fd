package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// The API's list: pages of a merchant's transactions, newest first, with
// the exact number of matches. Counting every matching row before each
// page (and walking every skipped row of a deep page with OFFSET) grows
// with the merchant's history; instead the count of each N'Djamena day is
// read from the kept totals (transaction_daily_totals, written in the same
// database transaction as every insert, settlement and delete), and only
// what those totals cannot answer is read from the transactions' indexes:
//
//   - the totals count transactions whose push is in flight, which are not
//     listed: they are taken out of each day through a partial index that
//     holds only those rows (migration 00009), a handful at any time;
//   - a from or to that does not fall on a day's edge cuts its day in two:
//     that day (at most two of them) is counted from the rows themselves,
//     with the list's own conditions.
//
// All of it is one statement, and the page is read after it in the same
// snapshot, so the total counts exactly the rows the pages hold. The page
// is read from the days holding its rows alone: the other days are
// skipped by their counts, and OFFSET walks those days' rows from the
// nearer end (pageWalk), in an index that holds the list's conditions
// (migration 00011). A page therefore costs at most half of its days'
// matching index entries, whatever its number.

// dayCount is how many listed transactions matching a filter were created
// on one N'Djamena day (2006-01-02).
type dayCount struct {
	day string
	n   int
}

// ListTransactions implements payment.Store: newest first, ties broken by id
// so pages never overlap. A transaction whose push is in flight is not
// listed: a refused push deletes it. One whose sender died is shown once
// the poller judges its push taken. The counts and the page are read in
// one snapshot (InSnapshot): read apart, a payment created between them
// was on the page but not in its total, and a deep page's walk, placed
// by the counts, was off by it.
func (s *Transactions) ListTransactions(ctx context.Context, merchantID string, f payment.ListFilter) (*payment.Page, error) {
	f, some := f.Microseconds()
	if !some || !payment.ValidID(merchantID) {
		return &payment.Page{Transactions: []payment.Transaction{}}, nil
	}
	var page *payment.Page
	err := s.db.InSnapshot(ctx, func(tx *sql.Tx) error {
		page = &payment.Page{Transactions: []payment.Transaction{}}
		days, err := s.dayCounts(ctx, tx, merchantID, f, f.Page > 1)
		if err != nil {
			return err
		}
		for _, d := range days {
			page.Total += d.n
		}
		// Compare pages before multiplying: (Page-1)*PerPage overflows for
		// a huge page number, which PostgreSQL refused as a negative
		// OFFSET and SQLite read as page 1. Past the end is an empty page.
		if f.Page-1 >= (page.Total+f.PerPage-1)/f.PerPage {
			return nil
		}
		page.Transactions, err = s.readPage(ctx, tx, merchantID, f, days, page.Total)
		return err
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// readPage reads page f.Page of a list whose days dayCounts counted.
func (s *Transactions) readPage(ctx context.Context, tx *sql.Tx, merchantID string, f payment.ListFilter, days []dayCount, total int) ([]payment.Transaction, error) {
	g, order, limit, offset, err := pageWalk(f, days, total)
	if err != nil {
		return nil, err
	}
	// The page's ids first, from the listed rows' indexes alone (migration
	// 00011): the rows OFFSET skips are passed over there, and only the
	// page's own rows are read from the table, by primary key. (The inner
	// query is the one scoped to the merchant: with merchant_id = $1 on
	// the outer one too, SQLite read the merchant's every row to test it
	// against the ids.)
	where, args := s.listFilter(merchantID, g)
	args = append(args, limit, offset)
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM transactions
		WHERE id IN (SELECT id FROM transactions WHERE %s
			ORDER BY created_at %[3]s, id %[3]s LIMIT $%[4]d OFFSET $%[5]d)
		ORDER BY created_at DESC, id DESC`, transactionColumns, strings.Join(where, " AND "), order, len(args)-1, len(args)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := make([]payment.Transaction, 0, limit)
	for rows.Next() {
		t, err := scanTransaction(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, *t)
	}
	return list, rows.Err()
}

// pageWalk says how to read page f.Page of a list whose matching rows
// number total, days holding them as dayCounts counted them: the filter
// narrowed to the days the page lies on, the direction of the walk (DESC
// or ASC), and its LIMIT and OFFSET.
//
// The days newer than the page's first row, and older than its last, are
// skipped by their counts: the filter is narrowed to end with the first
// row's day and to start with the last row's (at their last and first
// microsecond, as times are stored). OFFSET then walks whichever is
// shorter: the rows of the first day before the page, newest first
// (DESC), or those of the last day after it, oldest first (ASC; the outer
// query puts the page back in order). A page thus walks at most half of a
// day's matching rows, and the last page of a busy day is as cheap as its
// first.
//
// The filter's from and to are replaced by the days' bounds rather than
// bounds added beside them: SQLite would read from the filter's own
// bound, through every skipped day.
func pageWalk(f payment.ListFilter, days []dayCount, total int) (g payment.ListFilter, order string, limit, offset int, err error) {
	g, before := f, (f.Page-1)*f.PerPage
	rows := min(f.PerPage, total-before) // on this page
	// first and last: the days holding the page's first and last rows;
	// skip: the rows of first before the page; window: the rows of the
	// days first to last.
	first, last, skip, window := -1, -1, 0, 0
	for i, d := range days {
		if first < 0 && before < d.n {
			first, skip = i, before
		}
		if first >= 0 {
			window += d.n
			if before+rows <= d.n {
				last = i
				break
			}
		}
		before -= d.n
	}
	if first < 0 || last < 0 {
		return g, "", 0, 0, fmt.Errorf("page %d of %d rows: its days are not in the counts", f.Page, total)
	}
	if first > 0 {
		start, err := dayStart(days[first].day)
		if err != nil {
			return g, "", 0, 0, err
		}
		if end := start.AddDate(0, 0, 1).Add(-time.Microsecond); g.To.IsZero() || g.To.After(end) {
			g.To = end
		}
	}
	after := window - skip - rows // the rows of the last day after the page
	if after >= skip {
		return g, "DESC", f.PerPage, skip, nil
	}
	if last < len(days)-1 {
		start, err := dayStart(days[last].day)
		if err != nil {
			return g, "", 0, 0, err
		}
		if g.From.IsZero() || g.From.Before(start) {
			g.From = start
		}
	}
	return g, "ASC", rows, after, nil
}

// dayCounts returns, newest day first, how many of the merchant's listed
// transactions match f on each day that has any, in one statement. Unless
// perDay, it returns the total alone (as one day named ""): the first
// page needs no more, and adding up in the database is cheaper than
// sending a year of days.
func (s *Transactions) dayCounts(ctx context.Context, tx *sql.Tx, merchantID string, f payment.ListFilter, perDay bool) ([]dayCount, error) {
	r := daysOf(f)
	day, inFlightDay, groupBy := "day", s.db.totalsDaySQL("created_at"), " GROUP BY day"
	if !perDay {
		day, inFlightDay, groupBy = "CAST('' AS TEXT)", "CAST('' AS TEXT)", ""
	}
	args := []any{merchantID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var parts []string
	if r.whole {
		// Status and operator, for the totals and the in-flight rows.
		var kind []string
		if f.Status != "" {
			kind = append(kind, "status = "+arg(string(f.Status)))
		}
		if f.Operator != "" {
			kind = append(kind, "operator = "+arg(string(f.Operator)))
		}
		totals := append([]string{"merchant_id = $1"}, kind...)
		inFlight := append([]string{"merchant_id = $1", "push_in_flight"}, kind...)
		if r.first != "" {
			totals = append(totals, "day >= "+arg(r.first))
			inFlight = append(inFlight, "created_at >= "+arg(s.db.Time(r.wholeFrom)))
		}
		if r.last != "" {
			totals = append(totals, "day <= "+arg(r.last))
			inFlight = append(inFlight, "created_at < "+arg(s.db.Time(r.wholeTo)))
		}
		// SQLite's planner, without statistics, would rather read every
		// row of the merchant (or of its operator) through another index.
		inFlightFrom := "transactions"
		if s.db.Dialect == SQLite {
			inFlightFrom += " INDEXED BY transactions_in_flight"
		}
		parts = append(parts,
			`SELECT `+day+` AS day, CAST(COALESCE(SUM(count), 0) AS BIGINT) AS n FROM transaction_daily_totals
				WHERE `+strings.Join(totals, " AND ")+groupBy,
			`SELECT `+inFlightDay+` AS day, CAST(-1 AS BIGINT) AS n FROM `+inFlightFrom+`
				WHERE `+strings.Join(inFlight, " AND "))
	}
	for _, e := range r.edges {
		var cond []string
		cond, args = s.listFilterAfter(args, e.f)
		label := "CAST('' AS TEXT)"
		if perDay {
			label = "CAST(" + arg(e.day) + " AS TEXT)"
		}
		parts = append(parts, `SELECT `+label+` AS day, COUNT(*) AS n FROM transactions
			WHERE `+strings.Join(cond, " AND "))
	}
	if len(parts) == 0 {
		return nil, nil
	}
	// The parts are added up here rather than by the database: beyond one
	// row per day there are only the in-flight rows and the edges' counts.
	rows, err := tx.QueryContext(ctx, strings.Join(parts, "\nUNION ALL\n"), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var d dayCount
		if err := rows.Scan(&d.day, &d.n); err != nil {
			return nil, err
		}
		counts[d.day] += d.n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	days := make([]dayCount, 0, len(counts))
	for d, n := range counts {
		if n > 0 {
			days = append(days, dayCount{d, n})
		}
	}
	slices.SortFunc(days, func(a, b dayCount) int { return strings.Compare(b.day, a.day) })
	return days, nil
}

// dayRange is how a filter's from and to cut the N'Djamena days: the whole
// days between them, counted from the kept totals, and the days they cut
// (at most two), counted from the rows.
type dayRange struct {
	whole              bool      // whether any day lies whole between from and to
	first, last        string    // the whole days, inclusive; "" is unbounded
	wholeFrom, wholeTo time.Time // first's start and the end of last (exclusive)
	edges              []edgeDay
}

// edgeDay is a day that from or to cuts, and the list's filter narrowed to
// its part of that day: from to the day's end, or the day's start to to.
// A single range on created_at lets the count read just that part of the
// day through an index (SQLite would take the filter's from and to as the
// range, and read every day between them, had the day's bounds been added).
type edgeDay struct {
	day string
	f   payment.ListFilter
}

// lastDay is the last microsecond of N'Djamena day 9999-12-31. Later
// instants fall on days of five-digit years, which text order (the totals'
// day) would sort before the others. The server's clock writes created_at,
// so no transaction is created that late; a filter bound beyond it is read
// as this instant, which leaves every row's match unchanged.
var lastDay = time.Date(10000, 1, 1, 0, 0, 0, 0, ndjamena).Add(-time.Microsecond)

// daysOf cuts f's from and to into days. Times are compared as stored, at
// the microsecond: a from at a day's first microsecond and a to at its last
// leave that day whole.
func daysOf(f payment.ListFilter) dayRange {
	var r dayRange
	var fromEdge, toEdge *edgeDay
	if !f.From.IsZero() {
		from := f.From.Truncate(time.Microsecond)
		if from.After(lastDay) {
			return r // nothing can match
		}
		start := midnight(from)
		if from.Equal(start) {
			r.first, r.wholeFrom = totalsDay(start), start
		} else {
			next := start.AddDate(0, 0, 1)
			e := edgeDay{day: totalsDay(start), f: f}
			if last := next.Add(-time.Microsecond); f.To.IsZero() || f.To.After(last) {
				e.f.To = last
			}
			fromEdge = &e
			r.first, r.wholeFrom = totalsDay(next), next
		}
	}
	if !f.To.IsZero() {
		to := f.To.Truncate(time.Microsecond)
		if to.After(lastDay) {
			to = lastDay
		}
		start := midnight(to)
		end := start.AddDate(0, 0, 1)
		if to.Add(time.Microsecond).Equal(end) {
			r.last, r.wholeTo = totalsDay(start), end
		} else {
			e := edgeDay{day: totalsDay(start), f: f}
			if f.From.Before(start) {
				e.f.From = start
			}
			toEdge = &e
			r.last, r.wholeTo = totalsDay(start.AddDate(0, 0, -1)), start
		}
	}
	r.whole = (r.wholeFrom.IsZero() || !r.wholeFrom.After(lastDay)) &&
		(r.wholeFrom.IsZero() || r.wholeTo.IsZero() || r.wholeFrom.Before(r.wholeTo))
	switch {
	case fromEdge != nil && toEdge != nil && fromEdge.day == toEdge.day:
		// Cut on both sides: the filter's own from and to bound it.
		r.edges = []edgeDay{{day: fromEdge.day, f: f}}
	default:
		for _, e := range []*edgeDay{fromEdge, toEdge} {
			if e != nil {
				r.edges = append(r.edges, *e)
			}
		}
	}
	return r
}

// midnight is the start of t's N'Djamena day.
func midnight(t time.Time) time.Time {
	t = t.In(ndjamena)
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, ndjamena)
}

// dayStart is the first instant of N'Djamena day (2006-01-02).
func dayStart(day string) (time.Time, error) {
	t, err := time.ParseInLocation(time.DateOnly, day, ndjamena)
	if err != nil {
		return time.Time{}, fmt.Errorf("totals day %q: %w", day, err)
	}
	return t, nil
}
