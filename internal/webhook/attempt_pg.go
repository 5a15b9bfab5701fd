package webhook

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/momopay/momopay/internal/store"
)

// The PostgreSQL forms of an attempt's statements, each for many attempts
// at once (attempt_batch.go says why). The two writes of a claim, and the
// two of a finish, are one statement: a data-modifying WITH runs both in
// the statement's own transaction, so they still commit together. Each
// input's conditions are its own (the delivery as its caller read it).
//
// Both writes commit asynchronously (store.RelaxedCommit): their commits,
// two per attempt, were what a drain waited on (every worker queued on the
// WAL flush, LWLock:WALWrite). The commit is still made and seen by every
// other transaction at once, and PostgreSQL writes it to disk within
// about 200 ms (wal_writer_delay); only a crash of the database server
// itself in that window can lose it, and a lost claim or outcome makes
// the attempt be made again: the receiver may get the delivery a second time,
// with the same X-Service-Delivery-Id (contract §6.5 allows duplicates),
// and the history may miss that one attempt. A momopay process killed at
// any point loses nothing. The delivery itself is written by the
// settlement's own transaction, durably.

// The batches find each row by its primary key alone, and are planned
// afresh for each run:
//
//   - The other conditions on a delivery (its merchant, state and
//     attempts as the caller read them) are written with IS NOT DISTINCT
//     FROM, which no index serves, so that the planner cannot look the row
//     up through webhook_deliveries_merchant_state instead. It did, seeing
//     three of its columns matched: that walks all the merchant's pending
//     deliveries for each row, 0.14 ms a row with 10,000 of them pending
//     (auto_explain during a drain), where the key takes a few µs. The
//     columns are NOT NULL, so the test is plain equality.
//   - replanned makes pgx send the statement unnamed, so PostgreSQL plans
//     each run with its arrays' real sizes and the table's current size.
//     A plan cached on a connection since the tables were small (a new
//     database, or the first minutes of a burst) hash-joined a sequential
//     scan of webhook_attempts, and was kept until the next ANALYZE.
//     Planning costs a fraction of a millisecond, once per batch.
const replanned = pgx.QueryExecModeExec

// targetKey names a delivery to load.
type targetKey struct{ merchantID, deliveryID string }

// loadTargets is loadTarget for many deliveries: each answer is the
// delivery, or nil for a delivery the merchant does not have. WITH
// ORDINALITY ties each row to its input.
func loadTargets(ctx context.Context, db *store.DB, in []targetKey) ([]*target, error) {
	merchants, ids := make([]string, len(in)), make([]string, len(in))
	for i, k := range in {
		merchants[i], ids[i] = k.merchantID, k.deliveryID
	}
	rows, err := db.QueryContext(ctx, `SELECT k.n, `+targetColumns+`
		FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS k(merchant_id, id, n)
		JOIN webhook_deliveries d ON d.id = k.id AND d.merchant_id IS NOT DISTINCT FROM k.merchant_id `+targetJoin,
		replanned, merchants, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]*target, len(in))
	for rows.Next() {
		var n int
		d, err := scanTarget(rows, &n)
		if err != nil {
			return nil, err
		}
		out[n-1] = d
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// claimMany is claim for many deliveries with no lease to take over. An
// automatic attempt must also be due. Two inputs for one delivery (two
// instances' dispatchers) update it once: only the attempt the statement wrote is
// claimed.
func claimMany(ctx context.Context, db *store.DB, in []claimInput) ([]bool, error) {
	n := len(in)
	merchants, ids, states, attempts := make([]string, n), make([]string, n), make([]string, n), make([]int32, n)
	ats, leases, attemptIDs, manual := make([]time.Time, n), make([]time.Time, n), make([]string, n), make([]bool, n)
	for i, x := range in {
		merchants[i], ids[i], states[i], attempts[i] = x.d.merchantID, x.d.id, string(x.d.state), int32(x.d.attempts)
		ats[i], leases[i], attemptIDs[i], manual[i] = x.c.at, x.lease, x.c.id, x.c.manual
	}
	rows, err := db.QueryContext(ctx, `WITH `+store.RelaxedCommit+`, input AS (
			SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[],
				$7::uuid[], $8::boolean[]) AS i(merchant_id, id, state, attempts, at, lease_until, attempt_id, manual)),
		claimed AS (
			UPDATE webhook_deliveries d SET attempts = i.attempts + 1, lease_until = i.lease_until
			FROM input i
			WHERE d.id = i.id AND (d.merchant_id, d.state, d.attempts) IS NOT DISTINCT FROM (i.merchant_id, i.state, i.attempts)
			AND (d.lease_until IS NULL OR d.lease_until <= i.at)
			AND (i.manual OR d.next_attempt_at IS NULL OR d.next_attempt_at <= i.at)
			RETURNING d.merchant_id, d.id, i.attempt_id, i.attempts + 1 AS number, i.manual, i.at)
		INSERT INTO webhook_attempts
			(id, merchant_id, delivery_id, number, manual, attempted_at, status_code, error, latency_ms, response_excerpt, stage)
		SELECT attempt_id, merchant_id, id, number, manual, at, NULL, '', 0, '', $9 FROM claimed, relaxed
		RETURNING id`,
		replanned, merchants, ids, states, attempts, ats, leases, attemptIDs, manual, stageSending)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	won := make(map[string]bool, n)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		won[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]bool, n)
	for i, x := range in {
		out[i] = won[x.c.id]
	}
	return out, nil
}

// finishMany is finish for many attempts: each attempt row gets its
// outcome whatever happened meanwhile, and each delivery its new state on
// the condition that it is still as the claim left it.
func finishMany(ctx context.Context, db *store.DB, in []finishInput) ([]struct{}, error) {
	n := len(in)
	merchants, attemptIDs, deliveryIDs, codes := make([]string, n), make([]string, n), make([]string, n), make([]*int32, n)
	errs, latencies, excerpts, states := make([]string, n), make([]int64, n), make([]string, n), make([]string, n)
	nexts, nows, oldStates, numbers := make([]*time.Time, n), make([]time.Time, n), make([]string, n), make([]int32, n)
	for i, x := range in {
		merchants[i], attemptIDs[i], deliveryIDs[i] = x.d.merchantID, x.c.id, x.d.id
		if x.a.StatusCode != 0 {
			code := int32(x.a.StatusCode)
			codes[i] = &code
		}
		errs[i], latencies[i], excerpts[i], states[i] = x.a.Error, x.a.LatencyMS, x.a.ResponseExcerpt, string(x.state)
		if !x.next.IsZero() {
			nexts[i] = &x.next
		}
		nows[i], oldStates[i], numbers[i] = x.now, string(x.d.state), int32(x.c.number)
	}
	_, err := db.ExecContext(ctx, `WITH `+store.RelaxedCommit+`, input AS (
			SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::text[], $6::bigint[], $7::text[],
				$8::text[], $9::timestamptz[], $10::timestamptz[], $11::text[], $12::int[])
			AS i(merchant_id, attempt_id, delivery_id, status_code, error, latency_ms, excerpt,
				state, next_attempt_at, now, old_state, number)),
		outcome AS (
			UPDATE webhook_attempts a SET stage = $13, status_code = i.status_code, error = i.error,
				latency_ms = i.latency_ms, response_excerpt = i.excerpt
			FROM input i WHERE a.merchant_id = i.merchant_id AND a.id = i.attempt_id)
		UPDATE webhook_deliveries d SET state = i.state, next_attempt_at = i.next_attempt_at, lease_until = NULL,
			resend_requested_at = NULL, updated_at = i.now
		FROM input i, relaxed
		WHERE d.id = i.delivery_id AND (d.merchant_id, d.state, d.attempts) IS NOT DISTINCT FROM (i.merchant_id, i.old_state, i.number)`,
		replanned, merchants, attemptIDs, deliveryIDs, codes, errs, latencies, excerpts,
		states, nexts, nows, oldStates, numbers, stageDone)
	if err != nil {
		return nil, err
	}
	return make([]struct{}, n), nil
}
