package store

import (
	"context"
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
// All of it is one statement, so the per-day counts and their sum, the
// total, come from one snapshot. The page then starts at the day holding
// its first row: the newer days are skipped by their counts and OFFSET
// walks only the rows of that one day before the page. A page therefore
// costs at most one day's matching rows of OFFSET, whatever its number.

// dayCount is how many listed transactions matching a filter were created
// on one N'Djamena day (2006-01-02).
type dayCount struct {
	day string
	n   int
}

// ListTransactions implements payment.Store: newest first, ties broken by id
// so pages never overlap. A transaction whose push is in flight is not
// listed: a refused push deletes it. One whose sender died is shown once
// the poller judges its push taken.
func (s *Transactions) ListTransactions(ctx context.Context, merchantID string, f payment.ListFilter) (*payment.Page, error) {
	days, err := s.dayCounts(ctx, merchantID, f)
	if err != nil {
		return nil, err
	}
	page := &payment.Page{Transactions: []payment.Transaction{}}
	for _, d := range days {
		page.Total += d.n
	}
	// Compare pages before multiplying: (Page-1)*PerPage overflows for a
	// huge page number, which PostgreSQL refused as a negative OFFSET and
	// SQLite read as page 1. Past the end is an empty page.
	if f.Page-1 >= (page.Total+f.PerPage-1)/f.PerPage {
		return page, nil
	}
	// The day holding the page's first row; the newer days are skipped
	// by their counts. The newest day needs no bound: the filter's own
	// to (if any) bounds it.
	offset := (f.Page - 1) * f.PerPage
	var before time.Time
	for i, d := range days {
		if offset < d.n {
			if i > 0 {
				if before, err = dayStart(d.day); err != nil {
					return nil, err
				}
				before = before.AddDate(0, 0, 1)
			}
			break
		}
		offset -= d.n
	}

	where, args := s.listFilter(merchantID, f)
	if !before.IsZero() {
		args = append(args, s.db.Time(before))
		where = append(where, fmt.Sprintf("created_at < $%d", len(args)))
	}
	args = append(args, f.PerPage, offset)
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM transactions WHERE %s
		ORDER BY created_at DESC, id DESC LIMIT $%d OFFSET $%d`, transactionColumns, strings.Join(where, " AND "), len(args)-1, len(args)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTransaction(rows)
		if err != nil {
			return nil, err
		}
		page.Transactions = append(page.Transactions, *t)
	}
	return page, rows.Err()
}

// dayCounts returns, newest day first, how many of the merchant's listed
// transactions match f on each day that has any, in one statement.
func (s *Transactions) dayCounts(ctx context.Context, merchantID string, f payment.ListFilter) ([]dayCount, error) {
	r := daysOf(f)
	// The edge days are counted with the list's own conditions: their
	// arguments come first, so listFilter's placeholders stay as they are.
	// Without edge days they are left out (PostgreSQL refuses a parameter
	// that no condition uses).
	listWhere, args := s.listFilter(merchantID, f)
	if len(r.edges) == 0 {
		args = args[:1]
	}
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
		parts = append(parts,
			`SELECT day, CAST(SUM(count) AS BIGINT) AS n FROM transaction_daily_totals
				WHERE `+strings.Join(totals, " AND ")+` GROUP BY day`,
			`SELECT `+s.db.totalsDaySQL("created_at")+` AS day, -COUNT(*) AS n FROM transactions
				WHERE `+strings.Join(inFlight, " AND ")+` GROUP BY 1`)
	}
	for _, e := range r.edges {
		cond := append(slices.Clone(listWhere), e.bounds(s.db, arg)...)
		parts = append(parts, `SELECT CAST(`+arg(e.day)+` AS TEXT) AS day, COUNT(*) AS n FROM transactions
			WHERE `+strings.Join(cond, " AND "))
	}
	if len(parts) == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT day, CAST(SUM(n) AS BIGINT) FROM (`+strings.Join(parts, "\nUNION ALL\n")+`) parts
		GROUP BY day ORDER BY day DESC`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var days []dayCount
	for rows.Next() {
		var d dayCount
		if err := rows.Scan(&d.day, &d.n); err != nil {
			return nil, err
		}
		if d.n > 0 {
			days = append(days, d)
		}
	}
	return days, rows.Err()
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

// edgeDay is a day that from or to cuts. A from that cuts it needs an
// upper bound (the day's end), a to that cuts it a lower one (its start):
// the other side is the filter's own bound. When both cut the same day the
// filter bounds it on both sides.
type edgeDay struct {
	day        string
	start, end time.Time // zero when the filter's from or to bounds that side
}

func (e edgeDay) bounds(db *DB, arg func(any) string) []string {
	var out []string
	if !e.start.IsZero() {
		out = append(out, "created_at >= "+arg(db.Time(e.start)))
	}
	if !e.end.IsZero() {
		out = append(out, "created_at < "+arg(db.Time(e.end)))
	}
	return out
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
			fromEdge = &edgeDay{day: totalsDay(start), end: next}
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
			toEdge = &edgeDay{day: totalsDay(start), start: start}
			r.last, r.wholeTo = totalsDay(start.AddDate(0, 0, -1)), start
		}
	}
	r.whole = (r.wholeFrom.IsZero() || !r.wholeFrom.After(lastDay)) &&
		(r.wholeFrom.IsZero() || r.wholeTo.IsZero() || r.wholeFrom.Before(r.wholeTo))
	switch {
	case fromEdge != nil && toEdge != nil && fromEdge.day == toEdge.day:
		r.edges = []edgeDay{{day: fromEdge.day}}
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
