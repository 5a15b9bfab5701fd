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
// oldest first, at most perEndpoint of any one endpoint, leaving out the
// deliveries in skip, the endpoints in full and the merchants in busy.
//
// A look must cost the same whatever the backlog of the endpoints and
// merchants it leaves out: walking every pending delivery by
// next_attempt_at, as it once did, walked past all of theirs, and a
// merchant with 200,000 deliveries to receivers that never answer kept a
// core busy and delayed every other merchant's webhooks by seconds. So a
// look first finds the endpoints that have pending deliveries, one index
// step each (a skip scan of webhook_deliveries_pending_endpoint), leaves
// out the full and busy ones, and then reads at most perEndpoint due
// deliveries of each from the same index. Its cost grows with the number
// of endpoints that have deliveries in play, not with how many they have.
func (s *Service) due(ctx context.Context, limit, perEndpoint int, skip, full, busy []string) ([]*target, error) {
	now := s.db.Time(s.stamp())
	if s.db.Dialect == store.SQLite {
		return s.dueSQLite(ctx, now, limit, perEndpoint, skip, full, busy)
	}
	// PostgreSQL: the same in one statement, each endpoint's deliveries
	// read by a LATERAL subquery.
	q := `WITH RECURSIVE eps(endpoint_id) AS (
			(SELECT endpoint_id FROM webhook_deliveries WHERE state = 'pending' ORDER BY endpoint_id LIMIT 1)
			UNION ALL
			SELECT (SELECT w.endpoint_id FROM webhook_deliveries w
				WHERE w.state = 'pending' AND w.endpoint_id > eps.endpoint_id ORDER BY w.endpoint_id LIMIT 1)
			FROM eps WHERE eps.endpoint_id IS NOT NULL
		), due AS MATERIALIZED (
			SELECT x.id, x.next_attempt_at FROM eps
			JOIN webhook_endpoints e ON e.id = eps.endpoint_id
			CROSS JOIN LATERAL (
				SELECT w.id, w.next_attempt_at FROM webhook_deliveries w
				WHERE w.endpoint_id = eps.endpoint_id AND w.state = 'pending' AND w.next_attempt_at <= $1
				AND (w.lease_until IS NULL OR w.lease_until <= $1) AND ` + s.notIn("w.id", 4) + `
				ORDER BY w.next_attempt_at LIMIT $3) x
			WHERE ` + s.notIn("e.id", 5) + ` AND ` + s.notIn("e.merchant_id", 6) + `
			ORDER BY x.next_attempt_at LIMIT $2)
		SELECT ` + targetColumns + ` FROM due JOIN webhook_deliveries d ON d.id = due.id ` + targetJoin + `
		ORDER BY d.next_attempt_at`
	return scanTargets(s.db.QueryContext(ctx, q, replanned, now, limit, perEndpoint, s.idList(skip), s.idList(full), s.idList(busy)))
}

// dueSQLite is due on SQLite, which has no LATERAL: one query finds the
// endpoints with due deliveries, oldest first, and one query per endpoint
// reads its deliveries (all in process, so the queries cost no round
// trips).
func (s *Service) dueSQLite(ctx context.Context, now any, limit, perEndpoint int, skip, full, busy []string) ([]*target, error) {
	endpoints, err := scanIDs(s.db.Reader().QueryContext(ctx, `WITH RECURSIVE eps(endpoint_id) AS (
			SELECT (SELECT min(endpoint_id) FROM webhook_deliveries WHERE state = 'pending')
			UNION ALL
			SELECT (SELECT min(w.endpoint_id) FROM webhook_deliveries w WHERE w.state = 'pending' AND w.endpoint_id > eps.endpoint_id)
			FROM eps WHERE eps.endpoint_id IS NOT NULL
		), heads AS (
			SELECT e.id, (SELECT w.next_attempt_at FROM webhook_deliveries w
				WHERE w.endpoint_id = e.id AND w.state = 'pending' AND (w.lease_until IS NULL OR w.lease_until <= $1)
				ORDER BY w.next_attempt_at LIMIT 1) AS oldest
			FROM eps JOIN webhook_endpoints e ON e.id = eps.endpoint_id
			WHERE `+s.notIn("e.id", 3)+` AND `+s.notIn("e.merchant_id", 4)+`)
		SELECT id FROM heads WHERE oldest <= $1 ORDER BY oldest LIMIT $2`, now, limit, s.idList(full), s.idList(busy)))
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range endpoints {
		of, err := scanIDs(s.db.Reader().QueryContext(ctx, `SELECT id FROM webhook_deliveries
			WHERE endpoint_id = $1 AND state = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2)
			AND `+s.notIn("id", 3)+` ORDER BY next_attempt_at LIMIT $4`, e, now, s.idList(skip), perEndpoint))
		if err != nil {
			return nil, err
		}
		ids = append(ids, of...)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return scanTargets(s.db.Reader().QueryContext(ctx, `SELECT `+targetColumns+` FROM webhook_deliveries d `+targetJoin+`
		WHERE d.id IN (SELECT value FROM json_each($1)) ORDER BY d.next_attempt_at LIMIT $2`, s.idList(ids), limit))
}

// scanIDs reads rows of one text column and closes them.
func scanIDs(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
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

// in is the condition that column is one of the ids of parameter n, given
// by idList.
func (s *Service) in(column string, n int) string {
	p := "$" + strconv.Itoa(n)
	if s.db.Dialect == store.Postgres {
		return column + " = ANY(" + p + "::uuid[])"
	}
	return column + " IN (SELECT value FROM json_each(" + p + "))"
}

// notIn is the condition that column is none of the ids of parameter n.
func (s *Service) notIn(column string, n int) string { return "NOT (" + s.in(column, n) + ")" }

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
// the pending deliveries only, through their partial index (by endpoint:
// it counts them all, in no order).
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
