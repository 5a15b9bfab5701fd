package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"time"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/store"
)

// The queries behind the Dispatcher: the due deliveries, the wake-up, and
// the depth of the queue for the metrics.

// due reads up to limit deliveries that are due and that no attempt holds,
// oldest first, leaving out the deliveries in skip, the endpoints in full
// and the merchants in busy.
//
// It must walk webhook_deliveries_pending_next (the partial index of the
// pending deliveries, by next_attempt_at) in order and stop at the limit,
// so that a look costs the same with ten or a hundred thousand deliveries
// due. PostgreSQL's statistics trail a burst: a table that gained
// thousands of due deliveries in seconds is still planned as holding a
// few dozen, and then the planner reads every due one and sorts them, for
// every look (7-10 ms a look at 10,000 due). So the look picks its ids
// alone (the join cannot be planned first), in a transaction where
// sorting is ruled out, leaving the index walk as the plan. SQLite's
// planner walks the index for the ORDER BY by itself.
func (s *Service) due(ctx context.Context, limit int, skip, full, busy []string) ([]*target, error) {
	q := `WITH due AS MATERIALIZED (
			SELECT id FROM webhook_deliveries
			WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
			AND ` + s.notIn("id", 3) + ` AND ` + s.notIn("endpoint_id", 4) + ` AND ` + s.notIn("merchant_id", 5) + `
			ORDER BY next_attempt_at LIMIT $2)
		SELECT ` + targetColumns + ` FROM due JOIN webhook_deliveries d ON d.id = due.id ` + targetJoin
	args := []any{s.db.Time(s.stamp()), limit, s.idList(skip), s.idList(full), s.idList(busy)}
	if s.db.Dialect == store.SQLite {
		return scanTargets(s.db.Reader().QueryContext(ctx, q, args...))
	}
	var out []*target
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SET LOCAL enable_sort = off`); err != nil {
			return err
		}
		var err error
		out, err = scanTargets(tx.QueryContext(ctx, q, append([]any{replanned}, args...)...))
		return err
	})
	return out, err
}

// scanTargets reads rows of targetColumns and closes them.
func scanTargets(rows *sql.Rows, err error) ([]*target, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*target
	for rows.Next() {
		t, err := scanTarget(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// notIn is the condition that column is none of the ids of parameter n,
// given by idList.
func (s *Service) notIn(column string, n int) string {
	p := "$" + strconv.Itoa(n)
	if s.db.Dialect == store.Postgres {
		return "NOT (" + column + " = ANY(" + p + "::uuid[]))"
	}
	return column + " NOT IN (SELECT value FROM json_each(" + p + "))"
}

// idList is a list of ids as notIn's parameter: an array on PostgreSQL, a
// JSON array on SQLite.
func (s *Service) idList(ids []string) any {
	if ids == nil {
		ids = []string{} // [] rather than SQL NULL or JSON null
	}
	if s.db.Dialect == store.Postgres {
		return ids
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// announceDue tells every instance's dispatcher, once tx commits, that
// deliveries are due (PostgreSQL; on SQLite the dispatcher's poll finds
// them).
func (s *Service) announceDue(ctx context.Context, tx *sql.Tx) error {
	if s.db.Dialect != store.Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, '')`, wakeChannel)
	return err
}

// QueueStats describes the deliveries waiting for an attempt as of now, in
// the terms of the job queues' metrics (queue "webhooks"): due and free
// (available), held by an attempt (running), and waiting for their next
// time (scheduled); OldestDue is how late the oldest due one is. It reads
// the pending deliveries only, through their partial index.
func (s *Service) QueueStats(ctx context.Context, now time.Time) (jobs.QueueStats, error) {
	q := jobs.QueueStats{Queue: "webhooks", ByState: map[string]int64{"available": 0, "running": 0, "retryable": 0, "scheduled": 0}}
	var running, available, scheduled int64
	var oldest store.Timestamp
	at := s.db.Time(now.UTC())
	err := s.db.Reader().QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN lease_until > $1 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN (lease_until IS NULL OR lease_until <= $1) AND next_attempt_at <= $1 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN (lease_until IS NULL OR lease_until <= $1) AND next_attempt_at > $1 THEN 1 ELSE 0 END), 0),
			MIN(CASE WHEN (lease_until IS NULL OR lease_until <= $1) AND next_attempt_at <= $1 THEN next_attempt_at END)
		FROM webhook_deliveries WHERE state = 'pending'`, at).Scan(&running, &available, &scheduled, &oldest)
	if err != nil {
		return q, err
	}
	q.ByState["running"], q.ByState["available"], q.ByState["scheduled"] = running, available, scheduled
	if !oldest.IsZero() {
		q.OldestDue = max(now.Sub(oldest.Time), 0)
	}
	return q, nil
}
