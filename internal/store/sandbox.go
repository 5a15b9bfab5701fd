package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// SandboxPayment is what the sandbox's operator simulators know of a
// payment pushed to them: the payment itself, and the payer's answer by
// hand if one was given.
type SandboxPayment struct {
	InternalRef string
	PhoneNumber string
	Amount      int64
	RequestedAt time.Time
	Answered    bool
	Approved    bool
}

// SandboxAnswers keeps the sandbox payer's answers by hand in the database,
// so that every process of one sandbox (the server, the CLI) sees them and
// they survive restarts, as a real operator's records would.
type SandboxAnswers struct{ db *DB }

// NewSandboxAnswers returns the store of the sandbox payer's answers.
func NewSandboxAnswers(db *DB) *SandboxAnswers { return &SandboxAnswers{db: db} }

// Payment returns the payment with our internal_ref ref, with its answer;
// ok is false when there is none.
func (s *SandboxAnswers) Payment(ctx context.Context, ref string) (p SandboxPayment, ok bool, err error) {
	if !payment.ValidInternalRef(ref) {
		return SandboxPayment{}, false, nil
	}
	var created Timestamp
	var approved sql.NullBool
	err = s.db.QueryRowContext(ctx, `SELECT t.internal_ref, t.phone_number, t.amount, t.created_at, a.approved
		FROM transactions t LEFT JOIN sandbox_answers a ON a.internal_ref = t.internal_ref
		WHERE t.internal_ref = $1`, ref).Scan(&p.InternalRef, &p.PhoneNumber, &p.Amount, &created, &approved)
	if errors.Is(err, sql.ErrNoRows) {
		return SandboxPayment{}, false, nil
	}
	if err != nil {
		return SandboxPayment{}, false, err
	}
	p.RequestedAt, p.Answered, p.Approved = created.Time, approved.Valid, approved.Bool
	return p, true, nil
}

// Claim records the payer's answer to the payment with internal_ref ref
// unless it has one already, and reports whether this was the first: of
// two people answering one request on the simulated phone at once, one
// answers it.
func (s *SandboxAnswers) Claim(ctx context.Context, ref string, approve bool, at time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO sandbox_answers (internal_ref, approved, answered_at) VALUES ($1, $2, $3)
		ON CONFLICT (internal_ref) DO NOTHING`, ref, approve, s.db.Time(at))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Answer records the payer's answer to the payment with internal_ref ref;
// a later answer replaces an earlier one (the CLI's answer to a final
// payment, played as an operator's contradicting late report).
func (s *SandboxAnswers) Answer(ctx context.Context, ref string, approve bool, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO sandbox_answers (internal_ref, approved, answered_at) VALUES ($1, $2, $3)
		ON CONFLICT (internal_ref) DO UPDATE SET approved = excluded.approved, answered_at = excluded.answered_at`,
		ref, approve, s.db.Time(at))
	return err
}
