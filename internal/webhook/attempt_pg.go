package webhook

import (
	"context"
	"time"

	"github.com/momopay/momopay/internal/store"
)

// On PostgreSQL the two writes of a claim, and the two of a finish, are one
// statement each: a data-modifying WITH runs both in the statement's own
// transaction, so they still commit together. That saves a claim and a
// finish three round trips each (BEGIN, the second write, COMMIT), which
// were most of an attempt's database cost on a busy queue. SQLite cannot
// modify data in a WITH; there the transaction is in-process and costs no
// round trip. The claim that must also close an interrupted attempt is
// rare and keeps the transaction (claim).
//
// Both commit asynchronously (store.RelaxedCommit): their commits, two per
// attempt, were what a drain waited on (every worker queued on the WAL
// flush, LWLock:WALWrite). The commit is still made and seen by every
// other transaction at once, and PostgreSQL writes it to disk within
// about 200 ms (wal_writer_delay); only a crash of the database server
// itself in that window can lose it, and a lost claim or outcome makes
// the job run again: the receiver may get the delivery a second time,
// with the same X-Service-Delivery-Id (contract §6.5 allows duplicates),
// and the history may miss that one attempt. A momopay process killed at
// any point loses nothing. The delivery itself, and its job, are written
// by the settlement's own transaction, durably.

// claimInOneStatement is claim for a delivery with no lease to take over.
func (s *Service) claimInOneStatement(ctx context.Context, d *target, c *claimed, due string) (*claimed, error) {
	res, err := s.db.ExecContext(ctx, `WITH `+store.RelaxedCommit+`, claimed AS (
			UPDATE webhook_deliveries SET attempts = $1, lease_until = $2
			WHERE merchant_id = $3 AND id = $4 AND state = $5 AND attempts = $6
			AND (lease_until IS NULL OR lease_until <= $7)`+due+`
			RETURNING merchant_id, id)
		INSERT INTO webhook_attempts
			(id, merchant_id, delivery_id, number, manual, attempted_at, status_code, error, latency_ms, response_excerpt, stage)
		SELECT $8::uuid, merchant_id, id, $1, $9::boolean, $7, NULL, '', 0, '', $10 FROM claimed, relaxed`,
		c.number, s.db.Time(c.at.Add(s.lease())), d.merchantID, d.id, string(d.state), d.attempts, s.db.Time(c.at),
		c.id, c.manual, stageSending)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return nil, err
	}
	return c, nil
}

// finishInOneStatement is finish's two updates in one statement.
func (s *Service) finishInOneStatement(ctx context.Context, d *target, c *claimed, a *DeliveryAttempt, code any, state DeliveryState, next, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `WITH `+store.RelaxedCommit+`, outcome AS (
			UPDATE webhook_attempts SET stage = $1, status_code = $2, error = $3, latency_ms = $4, response_excerpt = $5
			WHERE merchant_id = $6 AND id = $7)
		UPDATE webhook_deliveries SET state = $8, next_attempt_at = $9, lease_until = NULL,
			resend_requested_at = NULL, updated_at = $10
		FROM relaxed
		WHERE merchant_id = $6 AND id = $11 AND state = $12 AND attempts = $13`,
		stageDone, code, a.Error, a.LatencyMS, a.ResponseExcerpt, d.merchantID, c.id,
		string(state), s.db.NullTime(next), s.db.Time(now), d.id, string(d.state), c.number)
	return err
}
