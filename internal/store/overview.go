package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// DailyTotal is the count and amount of a merchant's transactions created
// on one N'Djamena day (UTC+1) that have one status and operator now.
type DailyTotal struct {
	Day      string
	Status   payment.Status
	Operator payment.Operator
	Count    int64
	Amount   int64
}

// ndjamena is the zone of the totals' days: West Africa Time, UTC+1, no
// daylight saving (the migration's backfill adds the same hour).
var ndjamena = time.FixedZone("WAT", 60*60)

// totalsDay is the day a transaction created at t is counted in.
func totalsDay(t time.Time) string { return t.In(ndjamena).Format(time.DateOnly) }

// totalsDaySQL is totalsDay in this database's SQL, for the time column
// col: the expressions of migration 00006's backfill.
func (db *DB) totalsDaySQL(col string) string {
	if db.Dialect == Postgres {
		return fmt.Sprintf(`to_char((%s AT TIME ZONE 'UTC') + interval '1 hour', 'YYYY-MM-DD')`, col)
	}
	return fmt.Sprintf(`date(%s, '+1 hour')`, col)
}

// totalsShards is how many rows a merchant's (day, status, operator)
// totals are split into on PostgreSQL (migration 00010): concurrent writers
// pick one at random instead of all queueing on one row lock, held until
// their commit. SQLite has one writer and keeps one.
const totalsShards = 4

// totalsMove is count transactions entering one status's totals; a
// negative count takes them out.
type totalsMove struct {
	status payment.Status
	count  int64
}

// totalsColumns and totalsUpsert are the insert into the daily totals that
// adds to a row already there; createPG uses them too.
const (
	totalsColumns = `merchant_id, day, status, operator, shard, count, amount`
	totalsUpsert  = `ON CONFLICT (merchant_id, day, status, operator, shard)
		DO UPDATE SET count = transaction_daily_totals.count + excluded.count, amount = transaction_daily_totals.amount + excluded.amount`
)

// addToTotals moves t (its count and amount) between the status rows of
// its day, in one statement however many moves: a settlement takes it out
// of PENDING and into its final status in one round trip. It runs in the
// transaction that inserts, settles or deletes t. A shard's count may go
// negative (a payment counted in one shard as PENDING leaves from
// another): only the sum over the shards means anything. The moves must be
// of different statuses (one row may be changed once per statement), and
// rows are locked in the order given, so callers keep PENDING first.
func (db *DB) addToTotals(ctx context.Context, tx *sql.Tx, t *payment.Transaction, moves ...totalsMove) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO transaction_daily_totals (` + totalsColumns + `) VALUES `)
	args := []any{t.MerchantID, totalsDay(t.CreatedAt), string(t.Operator)}
	for i, m := range moves {
		if i > 0 {
			q.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&q, "($1, $2, $%d, $3, $%d, $%d, $%d)", n+1, n+2, n+3, n+4)
		args = append(args, string(m.status), db.totalsShard(), m.count, m.count*t.Amount)
	}
	q.WriteString(" " + totalsUpsert)
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// totalsShard picks the shard a write adds to: any of totalsShards on
// PostgreSQL, the only one on SQLite.
func (db *DB) totalsShard() int {
	if db.Dialect == Postgres {
		return rand.IntN(totalsShards)
	}
	return 0
}

// Figures reads what the dashboard's overview shows, from kept totals and
// indexes: its cost does not grow with the number of transactions.
type Figures struct{ db *DB }

// NewFigures returns the overview's reader.
func NewFigures(db *DB) *Figures { return &Figures{db: db} }

// DailyTotals returns a merchant's totals for the days first to last
// (2006-01-02, inclusive).
func (s *Figures) DailyTotals(ctx context.Context, merchantID, first, last string) ([]DailyTotal, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT day, status, operator, CAST(SUM(count) AS BIGINT), CAST(SUM(amount) AS BIGINT)
		FROM transaction_daily_totals WHERE merchant_id = $1 AND day >= $2 AND day <= $3
		GROUP BY day, status, operator HAVING SUM(count) <> 0 ORDER BY day, status, operator`, merchantID, first, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []DailyTotal{}
	for rows.Next() {
		var d DailyTotal
		if err := rows.Scan(&d.Day, &d.Status, &d.Operator, &d.Count, &d.Amount); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// RefundedByDay returns, by the N'Djamena day each payment was created
// (first to last, inclusive), the amounts refunded (REFUNDED) of a
// merchant's SUCCESS payments: what the overview takes off the money
// collected. A refund of a late SUCCESS after TIMEOUT is of no payment
// counted as collected, so it is left out. A merchant has few refunds, and
// they are read through refunds_by_transaction (migration 00014).
func (s *Figures) RefundedByDay(ctx context.Context, merchantID, first, last string) (map[string]int64, error) {
	day := s.db.totalsDaySQL("t.created_at")
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+day+`, CAST(SUM(r.amount) AS BIGINT)
		FROM refunds r JOIN transactions t ON t.merchant_id = r.merchant_id AND t.id = r.transaction_id
		WHERE r.merchant_id = $1 AND r.status = 'REFUNDED' AND t.status = 'SUCCESS'
		  AND `+day+` >= $2 AND `+day+` <= $3
		GROUP BY `+day, merchantID, first, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var d string
		var amount int64
		if err := rows.Scan(&d, &amount); err != nil {
			return nil, err
		}
		out[d] = amount
	}
	return out, rows.Err()
}

// LatestTransactions returns a merchant's n newest transactions, without
// counting the rest.
func (s *Figures) LatestTransactions(ctx context.Context, merchantID string, n int) ([]payment.Transaction, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+transactionColumns+` FROM transactions
		WHERE merchant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, merchantID, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []payment.Transaction{}
	for rows.Next() {
		t, err := scanTransaction(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, rows.Err()
}
