package payment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/operator"
)

// RefundStatus is where a refund stands.
type RefundStatus string

// The states of a refund. REQUESTED is recorded before the operator is
// asked, so a refund in flight blocks a second one; UNKNOWN means the
// operator's answer was lost (a person checks with the operator). A
// REFUSED or NOT_SENT refund moved no money (the operator said no, or was
// certainly never reached), so the payment may be refunded again.
const (
	RefundRequested RefundStatus = "REQUESTED"
	RefundRefunded  RefundStatus = "REFUNDED"
	RefundRefused   RefundStatus = "REFUSED"
	RefundUnknown   RefundStatus = "UNKNOWN"
	RefundNotSent   RefundStatus = "NOT_SENT"
)

// AutoRefundRequester is the requested_by of refunds the service made on
// its own, under the merchant's auto-refund policy.
const AutoRefundRequester = "auto-refund: late SUCCESS after TIMEOUT"

// Actor is who asked for a refund as the merchant's audit log names them
// (its who and address columns): the command line's user and host, or the
// service itself.
type Actor struct{ Name, Address string }

// AutoRefundActor is the service in the audit log when it refunds on its
// own.
var AutoRefundActor = Actor{Name: "momopay: auto-refund"}

// Refund is one request to give a payment's money back to the payer.
type Refund struct {
	ID            string
	MerchantID    string
	TransactionID string
	Amount        int64
	// RequestedBy says who asked: a person's name from the CLI, or
	// AutoRefundRequester.
	RequestedBy string
	// Actor is who asked, for the audit log; it is not kept with the
	// refund.
	Actor          Actor
	Status         RefundStatus
	OperatorCode   string
	OperatorDetail string
	OperatorRef    string
	RequestedAt    time.Time
	AnsweredAt     time.Time
}

// RefundStore persists refunds and the merchants' refund policy.
type RefundStore interface {
	// AutoRefundLateSuccess reports the merchant's policy for a SUCCESS the
	// operator reports after the payment ended TIMEOUT (off by default).
	AutoRefundLateSuccess(ctx context.Context, merchantID string) (bool, error)
	// PaidByOperator reports whether the operator said the payment was
	// paid: it is SUCCESS, or a late SUCCESS was recorded for it.
	PaidByOperator(ctx context.Context, merchantID, transactionID string) (bool, error)
	// StartRefund records r as REQUESTED; ErrRefundExists when a refund of
	// the payment is already under way or done. The merchant's audit log
	// gets the request in the same commit, before the operator is asked,
	// so money that moves is in the log even if the process dies then.
	StartRefund(ctx context.Context, r *Refund) error
	// FinishRefund records the operator's answer to r, and puts it in the
	// merchant's audit log in the same commit.
	FinishRefund(ctx context.Context, r *Refund) error
	// List returns the merchant's refunds of the given payments, oldest
	// first.
	List(ctx context.Context, merchantID string, transactionIDs ...string) ([]Refund, error)
}

// ErrRefundExists says a payment already has a refund under way or done.
var ErrRefundExists = &Error{Code: EUNPROCESSABLE, Message: "this payment already has a refund under way or done"}

// refundTimeout bounds one refund request to the operator.
const refundTimeout = 20 * time.Second

// CutShort reports a refund still REQUESTED well after the operator's
// answer was due (a minute, three times refundTimeout): the process
// asking stopped before recording it, and only the operator's portal can
// say whether the money moved.
func (r Refund) CutShort(now time.Time) bool {
	return r.Status == RefundRequested && now.Sub(r.RequestedAt) > 3*refundTimeout
}

// An auto-refund the operator could not be reached for is tried
// autoRefundTries times in all, autoRefundRetry after the first, then
// twice as long after each (1, 2, 4, 8 minutes): an outage of the
// operator's API, or its token endpoint, is usually that short, and a
// longer one leaves the reconciliation case to a person.
const (
	autoRefundTries = 5
	autoRefundRetry = time.Minute
)

// SetRefunds gives the service its refund store; without one, refunds are
// refused and late successes are only recorded.
func (s *Service) SetRefunds(r RefundStore) { s.refunds = r }

// Refund gives the payer of a paid transaction their money back, in full
// (Airtel refunds only in full). It is recorded with requestedBy and the
// operator's answer, which the returned Refund carries; actor names who
// asked in the merchant's audit log. Errors:
// ENOTFOUND, EUNPROCESSABLE (not paid, operator without refunds, unknown
// operator reference, a refund already under way or done).
func (s *Service) Refund(ctx context.Context, merchantID, id, requestedBy string, actor Actor) (*Refund, error) {
	if s.refunds == nil {
		return nil, Errorf(EUNPROCESSABLE, "refunds are not available on this service")
	}
	t, err := s.store.Transaction(ctx, merchantID, id)
	if err != nil {
		return nil, err
	}
	paid, err := s.refunds.PaidByOperator(ctx, merchantID, id)
	if err != nil {
		return nil, err
	}
	if !paid {
		return nil, Errorf(EUNPROCESSABLE, "transaction %s is %s and the operator never reported it paid: there is nothing to refund", t.ID, t.Status)
	}
	refunder, ok := operator.As[operator.Refunder](s.operators[t.Operator])
	if !ok {
		return nil, Errorf(EUNPROCESSABLE, "%s payments cannot be refunded through this service: refund the payer from the %s merchant portal", t.Operator, t.Operator)
	}
	if t.OperatorRef == "" {
		return nil, Errorf(EUNPROCESSABLE, "the %s reference of transaction %s is unknown, so it cannot be refunded here: refund it from the operator's portal", t.Operator, t.ID)
	}
	r := &Refund{
		ID: uuid.Must(uuid.NewV7()).String(), MerchantID: merchantID, TransactionID: t.ID, Amount: t.Amount,
		RequestedBy: requestedBy, Actor: actor, Status: RefundRequested, RequestedAt: s.now().UTC().Truncate(time.Microsecond),
	}
	if err := s.refunds.StartRefund(ctx, r); err != nil {
		return nil, err
	}
	bg := context.WithoutCancel(ctx)
	callCtx, cancel := context.WithTimeout(bg, refundTimeout)
	defer cancel()
	out, err := refunder.Refund(callCtx, operatorPayment(t), t.OperatorRef)
	switch {
	case errors.Is(err, operator.ErrUnavailable):
		r.Status, r.OperatorDetail = RefundNotSent, err.Error()
	case err != nil:
		r.Status, r.OperatorDetail = RefundUnknown, err.Error()
	case out.Refunded:
		r.Status = RefundRefunded
	default:
		r.Status = RefundRefused
	}
	r.OperatorCode, r.OperatorRef = out.Code, out.OperatorRef
	if err == nil {
		r.OperatorDetail = out.Detail
	}
	r.AnsweredAt = s.now().UTC().Truncate(time.Microsecond)
	if err := s.refunds.FinishRefund(bg, r); err != nil {
		return nil, fmt.Errorf("record the answer to refund %s (%s): %w", r.ID, r.Status, err)
	}
	s.log.Info("refund answered", "transaction_id", t.ID, "refund_id", r.ID, "status", r.Status, "operator_code", r.OperatorCode, "requested_by", requestedBy)
	return r, nil
}

// AutoRefund refunds a late SUCCESS after TIMEOUT when the merchant's
// policy says so. Its job (jobs.AutoRefund) is inserted with the
// reconciliation case the late SUCCESS opens, so neither the operator's
// callback nor the late check waits for the refund. It returns an error
// only for what a retry can mend (the database); a refund that cannot be
// made is logged, and the reconciliation case remains for a person. Run
// twice, it refunds once: the second run finds the first's refund
// recorded (ErrRefundExists), even one still waiting for its answer.
func (s *Service) AutoRefund(ctx context.Context, merchantID, id string) (time.Duration, error) {
	if s.refunds == nil {
		return 0, nil
	}
	on, err := s.refunds.AutoRefundLateSuccess(ctx, merchantID)
	if err != nil || !on {
		return 0, err
	}
	r, err := s.Refund(ctx, merchantID, id, AutoRefundRequester, AutoRefundActor)
	var e *Error
	switch {
	case err == nil && r.Status == RefundNotSent:
		// The operator could not be reached, so nothing moved: try again
		// later, a few times, each kept as a refund of its own.
		refunds, err := s.refunds.List(ctx, merchantID, id)
		if err != nil {
			return 0, err
		}
		tries := 0
		for _, prior := range refunds {
			if prior.Status == RefundNotSent {
				tries++
			}
		}
		if tries < autoRefundTries {
			s.log.Warn("auto-refund of a late SUCCESS not sent: the operator could not be reached; trying again", "transaction_id", id, "refund_id", r.ID, "tries", tries, "err", r.OperatorDetail)
			return autoRefundRetry << (tries - 1), nil
		}
		s.log.Error("auto-refund of a late SUCCESS not sent: the operator could not be reached; refund it by hand", "transaction_id", id, "refund_id", r.ID, "tries", tries)
	case errors.Is(err, ErrRefundExists):
	case errors.As(err, &e):
		s.log.Error("auto-refund of a late SUCCESS not possible; refund it by hand", "transaction_id", id, "err", err)
	case err != nil:
		return 0, err
	case r.Status == RefundRefunded:
		s.log.Warn("late SUCCESS after TIMEOUT auto-refunded", "transaction_id", id, "refund_id", r.ID)
	default:
		s.log.Error("late SUCCESS after TIMEOUT: the auto-refund was not done; check the operator's portal", "transaction_id", id, "refund_id", r.ID, "status", r.Status)
	}
	return 0, nil
}
