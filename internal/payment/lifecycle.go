package payment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/momopay/momopay/internal/operator"
)

// Sources of an outcome, recorded with reconciliation cases.
const (
	SourceCallback = "callback"
	SourcePoll     = "poll"
	SourceExpiry   = "expiry"
	SourceSandbox  = "sandbox"
	// SourcePush is the operator's answer to the push itself: a payment
	// it declined at once (operator.DeclinedError).
	SourcePush = "push"
	// SourceLateCheck is an enquiry after TIMEOUT (LateCheck).
	SourceLateCheck = "late_check"
)

// statusOf maps an operator's final state to ours; ok is false while the
// operator has no outcome yet.
func statusOf(st operator.State) (Status, bool) {
	switch st {
	case operator.Succeeded:
		return StatusSuccess, true
	case operator.Failed:
		return StatusFailed, true
	case operator.Expired:
		return StatusExpired, true
	}
	return "", false
}

// Settle records a final outcome for a transaction. Only the first outcome
// wins; a different, later one becomes a ReconciliationCase. It reports
// whether this call made the transition.
//
// Every path to a final state (callbacks, polls, the expiry check, the
// sandbox payer) comes through here, and the store's conditional update
// never sets EXPIRED before expires_at: EXPIRED means "still PENDING at
// expires_at and the operator says it expired" (contract §3). An earlier
// EXPIRED report is held, not recorded: the expiry check asks the operator
// again at expires_at and sets EXPIRED then.
func (s *Service) Settle(ctx context.Context, merchantID, id string, to Status, source, detail string) (*Transaction, bool, error) {
	return s.settle(ctx, merchantID, id, to, source, operator.Outcome{Detail: detail})
}

// settle is Settle with everything the operator said: its code, its
// reference and the failure reason are kept with the transaction. A late
// SUCCESS after TIMEOUT opens a reconciliation case, and the store queues
// its auto-refund (AutoRefund) in the same commit.
func (s *Service) settle(ctx context.Context, merchantID, id string, to Status, source string, o operator.Outcome) (*Transaction, bool, error) {
	detail := o.Detail
	if !to.Final() {
		return nil, false, Errorf(EINVALID, "cannot settle into %q", to)
	}
	t, changed, err := s.store.Settle(ctx, Settlement{
		MerchantID: merchantID, TransactionID: id, To: to,
		At: s.now().UTC().Truncate(time.Microsecond), Source: source, Detail: detail,
		OperatorRef: o.OperatorRef, OperatorCode: o.Code, FailureReason: string(o.Reason),
		// TIMEOUT is our own decision, not an operator's word: an expiry
		// check that loses a race to a real outcome is no discrepancy.
		Reconcile: to != StatusTimeout,
	})
	if err != nil {
		return nil, false, err
	}
	switch {
	case changed:
		s.log.Info("transaction settled", "transaction_id", id, "merchant_id", merchantID, "status", to, "source", source)
	case !t.Status.Final():
		s.log.Info("early expiry report held until expires_at", "transaction_id", id, "source", source, "expires_at", t.ExpiresAt)
	case t.Status != to && to != StatusTimeout:
		s.log.Warn("late operator outcome recorded for reconciliation", "transaction_id", id, "final", t.Status, "reported", to, "source", source)
	}
	return t, changed, nil
}

// SettleByRef settles from a callback of operator op, which names the
// payment by our internal_ref only.
//
// A callback settles only a payment of its own operator: one about another
// operator's payment is answered ENOTFOUND, exactly like a reference we do
// not know, and changes nothing. An operator (or whoever holds its callback
// secret) has no say over payments that went through another operator, and
// the answer tells it nothing about them.
func (s *Service) SettleByRef(ctx context.Context, op Operator, ref string, o operator.Outcome, source string) error {
	t, err := s.store.TransactionByInternalRef(ctx, ref)
	if err != nil {
		return err
	}
	if t.Operator != op {
		s.log.Warn("callback about another operator's payment ignored", "transaction_id", t.ID, "operator", t.Operator, "callback_operator", op)
		return ErrNotFound
	}
	to, final := statusOf(o.State)
	if !final {
		return s.heard(ctx, t.MerchantID, t.ID, source, o)
	}
	_, _, err = s.settle(ctx, t.MerchantID, t.ID, to, source, o)
	return err
}

// HandleCallback acts on a callback of operator op. A verified one settles
// its payment (SettleByRef); an unverified one is only a hint that the
// payment moved: the operator is asked at once, and its answer, not the
// callback's, is acted on. A hint about no payment of op changes nothing
// and is no error, so that hints cannot probe which payments exist.
func (s *Service) HandleCallback(ctx context.Context, op Operator, cb operator.Callback) error {
	if !cb.Unverified {
		if cb.Outcome.State == operator.Failed && cb.Outcome.Reason == operator.ReasonOther {
			cb.Outcome = s.failureDetails(ctx, op, cb.Ref, cb.Outcome)
		}
		return s.SettleByRef(ctx, op, cb.Ref, cb.Outcome, SourceCallback)
	}
	t, err := s.store.TransactionByInternalRef(ctx, cb.Ref)
	if errors.Is(err, ErrNotFound) || err == nil && t.Operator != op {
		// Answered as any hint is: an unsigned callback must not tell
		// its sender which internal_refs exist.
		s.log.Debug("unverified callback about no payment of this operator", "operator", op)
		return nil
	}
	if err != nil {
		return err
	}
	return s.hint(ctx, op, t)
}

// failureDetails completes a failure reported without its code (Airtel's
// callback carries only TF) with the enquiry's, which has it. The enquiry
// also catches callbacks that arrive out of order (a TF sent before the
// payer's second, successful try): when the operator's ledger says the
// payment succeeded, that wins, since telling the merchant FAILED for a
// payer who paid is the costlier mistake. Whatever goes wrong, or when the
// enquiry has no outcome, the callback's own outcome stands.
func (s *Service) failureDetails(ctx context.Context, op Operator, ref string, o operator.Outcome) operator.Outcome {
	t, err := s.store.TransactionByInternalRef(ctx, ref)
	if err != nil || t.Operator != op || t.Status.Final() || s.operators[op] == nil {
		return o
	}
	asked, err := s.operators[op].PaymentStatus(ctx, operatorPayment(t))
	if err != nil || asked.State != operator.Failed && asked.State != operator.Succeeded {
		return o
	}
	if asked.State == operator.Succeeded {
		s.log.Warn("failure callback contradicted by the operator's enquiry; settling its success", "transaction_id", t.ID, "operator", op)
	}
	return asked
}

// Enquire asks the operator where a transaction stands now, whatever its
// state, and settles what it says through the one transition: a final
// state stays, and a contradicting answer becomes a reconciliation case.
// It returns the transaction and whether this call changed it. An
// operator that cannot be asked, or has no outcome yet, changes nothing.
func (s *Service) Enquire(ctx context.Context, merchantID, id, source string) (*Transaction, bool, error) {
	t, err := s.store.Transaction(ctx, merchantID, id)
	if err != nil {
		return nil, false, err
	}
	op := s.operators[t.Operator]
	if op == nil {
		return t, false, Errorf(EUNPROCESSABLE, "%s is not configured on this service", t.Operator)
	}
	o, err := op.PaymentStatus(ctx, operatorPayment(t))
	if err != nil {
		s.log.Warn("status enquiry failed", "transaction_id", id, "source", source, "err", err)
		return t, false, nil
	}
	to, final := statusOf(o.State)
	if !final {
		return t, false, nil
	}
	return s.settle(ctx, merchantID, id, to, source, o)
}

// heard adds an operator's answer that settles nothing (still pending, or
// an expiry reported before expires_at) to the transaction's timeline.
func (s *Service) heard(ctx context.Context, merchantID, id, source string, o operator.Outcome) error {
	st, final := statusOf(o.State)
	if !final {
		st = StatusPending
	}
	return s.store.Heard(ctx, merchantID, id, TransactionEvent{
		Kind: EventHeard, At: s.now().UTC().Truncate(time.Microsecond), Source: source, Status: st, Detail: EventDetail(o.Detail),
	})
}

// Poll asks the operator where a PENDING transaction stands and settles it
// when the operator knows. It returns how long to wait before asking again,
// or 0 when polling is over: the transaction is final, or its expiry check
// (Expire) takes over.
func (s *Service) Poll(ctx context.Context, merchantID, id string) (time.Duration, error) {
	t, err := s.store.Transaction(ctx, merchantID, id)
	if errors.Is(err, ErrNotFound) {
		return 0, nil // refused at creation and forgotten
	}
	if err != nil {
		return 0, err
	}
	if t.Status.Final() {
		return 0, nil
	}
	now := s.now()
	if !now.Before(t.ExpiresAt) {
		return 0, nil
	}
	if t.PushInFlight {
		if !s.pushJudgedTaken(t) {
			return pollDelay(now.Sub(t.CreatedAt)), nil // the push is still being sent
		}
		// Its sender died during the push, which may have reached the
		// payer: keep the transaction, show it, and poll it like any other.
		if err := s.store.PushTaken(ctx, merchantID, id, "", s.pushStep(pushJudgedTakenNote)); err != nil {
			return 0, err
		}
	}
	op := s.operators[t.Operator]
	if op == nil {
		return 0, nil // its operator was unconfigured since: the expiry check ends it
	}
	schedule := pollDelay
	if ps, ok := operator.As[operator.PollScheduler](op); ok {
		schedule = ps.NextPoll
	}
	// The schedule's answer at age 0 is when the first enquiry is due: the
	// payer has barely seen the request before.
	if age, first := now.Sub(t.CreatedAt), schedule(0); age < first {
		return first - age, nil
	}
	o, err := op.PaymentStatus(ctx, operatorPayment(t))
	if err != nil {
		s.log.Warn("status poll failed; will ask again", "transaction_id", id, "err", err)
	} else if to, final := statusOf(o.State); final && to != StatusExpired {
		// The operator's own expiry is acted on at expires_at only, so that
		// EXPIRED always means "still PENDING after expires_at" (contract §3).
		_, _, err := s.settle(ctx, merchantID, id, to, SourcePoll, o)
		return 0, err
	} else if err := s.heard(ctx, merchantID, id, SourcePoll, o); err != nil {
		return 0, err
	}
	next := schedule(now.Sub(t.CreatedAt))
	if left := t.ExpiresAt.Sub(now); next > left {
		return 0, nil
	}
	return next, nil
}

// FirstPollDelay is how long after creation the operator is first asked:
// the payer needs a few seconds to see the request and answer.
const FirstPollDelay = 3 * time.Second

// pollDelay is the default enquiry schedule, for operators without their
// own (operator.PollScheduler): it backs off as a payment ages, since payers
// usually answer within seconds and later polls mostly catch lost
// callbacks. Its value at age 0 is FirstPollDelay.
func pollDelay(age time.Duration) time.Duration {
	switch {
	case age < FirstPollDelay:
		return FirstPollDelay - age
	case age < 30*time.Second:
		return 3 * time.Second
	case age < 2*time.Minute:
		return 10 * time.Second
	default:
		return 30 * time.Second
	}
}

// When the last enquiry at expires_at fails (a timeout, an operator's
// gateway restarting, its breaker open), Expire asks again every
// lastEnquiryRetry until lastEnquiryGrace past expires_at, and only then
// settles TIMEOUT without the operator's word: a payer who confirmed just
// before expiry should not be reported TIMEOUT (and their money left to a
// reconciliation case) for a moment's failure, and an operator down for
// longer should not keep the merchant waiting. The grace plus one
// enquiry's timeout stays inside SettleGrace.
const (
	lastEnquiryGrace = 15 * time.Second
	lastEnquiryRetry = 3 * time.Second
)

// SettleGrace is the longest a payment stays PENDING past expires_at on a
// healthy service: the last enquiry's retries and its timeout, or a killed
// process's payments taken up by another's sweeper (jobs.Sweeper). A
// payment PENDING for longer means the background work is stuck.
const SettleGrace = 30 * time.Second

// Expire runs at expires_at: it asks the operator once more; an outcome
// wins, the operator's own expiry gives EXPIRED, and anything else TIMEOUT.
// It returns a positive delay when called too early, or when the last
// enquiry failed and may be asked again (lastEnquiryGrace).
func (s *Service) Expire(ctx context.Context, merchantID, id string) (time.Duration, error) {
	t, err := s.store.Transaction(ctx, merchantID, id)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if t.Status.Final() {
		return 0, nil
	}
	if early := t.ExpiresAt.Sub(s.now()); early > 0 {
		return early, nil
	}
	to, out := StatusTimeout, operator.Outcome{Detail: "no answer before expires_at"}
	if op := s.operators[t.Operator]; op == nil {
		out.Detail = fmt.Sprintf("%s is no longer configured on this service", t.Operator)
	} else if o, err := op.PaymentStatus(ctx, operatorPayment(t)); err != nil {
		if left := t.ExpiresAt.Add(lastEnquiryGrace).Sub(s.now()); left > 0 {
			s.log.Warn("last status enquiry failed; will ask again before settling TIMEOUT", "transaction_id", id, "err", err)
			return min(lastEnquiryRetry, left), nil
		}
		out.Detail = fmt.Sprintf("last status enquiry failed: %v", err)
	} else if st, final := statusOf(o.State); final {
		to, out = st, o
	}
	_, _, err = s.settle(ctx, merchantID, id, to, SourceExpiry, out)
	return 0, err
}

// LateCheckAfter are the times after expires_at when a payment that ended
// TIMEOUT is asked about once more. TIMEOUT is our decision, not the
// operator's: a payer may confirm at the last moment, or the operator's
// answer may have been lost (Airtel's callback, sent once), and Moov sends
// no callback at all. Without these checks nothing would learn that such a
// payer paid.
var LateCheckAfter = []time.Duration{2 * time.Minute, 10 * time.Minute, time.Hour}

// LateCheck asks the operator about a payment that ended TIMEOUT (its job
// is inserted with the TIMEOUT). A SUCCESS is settled through the one
// transition: the payment stays TIMEOUT and a reconciliation case is
// opened, refunded at once when the merchant's policy says so. Any other
// final answer (a failure, the operator's expiry) ends the checks: no
// money moved. With no answer yet, it returns when to ask again, or 0
// after the last of LateCheckAfter.
func (s *Service) LateCheck(ctx context.Context, merchantID, id string) (time.Duration, error) {
	t, err := s.store.Transaction(ctx, merchantID, id)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	op := s.operators[t.Operator]
	if t.Status != StatusTimeout || op == nil {
		return 0, nil
	}
	next := time.Duration(0)
	if age := s.now().Sub(t.ExpiresAt); age >= 0 {
		for _, at := range LateCheckAfter {
			if at > age {
				next = at - age
				break
			}
		}
	}
	o, err := op.PaymentStatus(ctx, operatorPayment(t))
	if err != nil {
		s.log.Warn("late status check failed", "transaction_id", id, "err", err)
		return next, nil
	}
	switch to, final := statusOf(o.State); {
	case to == StatusSuccess:
		_, _, err := s.settle(ctx, merchantID, id, to, SourceLateCheck, o)
		return 0, err
	case final:
		return 0, nil
	}
	return next, nil
}
