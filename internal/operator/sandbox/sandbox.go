// Package sandbox is a simulated Mobile Money operator that behaves like a
// real one, asynchronously, so anyone can try every path of the payment
// lifecycle on their own machine. The payer's number chooses the behaviour
// (see Behaviour). It keeps no state: the answer to a status enquiry is a
// function of the number and the payment's age, so it survives restarts
// exactly as a real operator would.
package sandbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/momopay/momopay/internal/operator"
)

// The payer numbers with a scripted behaviour.
const (
	PhoneSuccess      = "+23560000001" // confirms after AnswerDelay, by callback
	PhoneFailure      = "+23560000002" // refuses after AnswerDelay, by callback
	PhoneNoAnswer     = "+23560000003" // never answers: TIMEOUT at expires_at
	PhoneExpired      = "+23560000004" // the operator reports the request expired
	PhoneUnavailable  = "+23560000005" // the operator refuses the push: 503
	PhoneLostCallback = "+23560000006" // confirms, but the callback is lost: polling only
)

// AnswerDelay is how long the scripted payers take to answer.
const AnswerDelay = 2 * time.Second

// UnavailableRetryAfter is the retry_after of the simulated outage: short,
// so that demos and client tests of retries stay quick.
const UnavailableRetryAfter = 2 * time.Second

// Operator is the simulated operator. The zero value is not usable; use New.
type Operator struct {
	name      string
	now       func() time.Time
	callbacks Callbacks
	log       *slog.Logger
}

// New returns a simulated operator named name (AIRTEL or MOOV) that posts
// its callbacks over HTTP as cb says. Moov sends none in reality, but the
// sandbox sends them for both so that demos answer within seconds.
func New(name string, now func() time.Time, cb Callbacks, log *slog.Logger) *Operator {
	return &Operator{name: name, now: now, callbacks: cb, log: log}
}

// RequestPayment implements operator.Operator.
func (o *Operator) RequestPayment(ctx context.Context, p operator.Payment) error {
	var outcome operator.Outcome
	switch p.PhoneNumber {
	case PhoneUnavailable:
		return &operator.UnavailableError{RetryAfter: UnavailableRetryAfter}
	case PhoneSuccess:
		outcome = operator.Outcome{State: operator.Succeeded, Detail: "sandbox: payer confirmed"}
	case PhoneFailure:
		outcome = operator.Outcome{State: operator.Failed, Detail: "sandbox: insufficient balance"}
	default:
		return nil
	}
	time.AfterFunc(AnswerDelay, func() { o.sendCallback(p.Ref, outcome) })
	return nil
}

// PaymentStatus implements operator.Operator.
func (o *Operator) PaymentStatus(ctx context.Context, p operator.Payment) (operator.Outcome, error) {
	answered := o.now().Sub(p.RequestedAt) >= AnswerDelay
	switch {
	case !answered:
	case p.PhoneNumber == PhoneSuccess, p.PhoneNumber == PhoneLostCallback:
		return operator.Outcome{State: operator.Succeeded, Detail: "sandbox: payer confirmed"}, nil
	case p.PhoneNumber == PhoneFailure:
		return operator.Outcome{State: operator.Failed, Detail: "sandbox: insufficient balance"}, nil
	case p.PhoneNumber == PhoneExpired:
		return operator.Outcome{State: operator.Expired, Detail: "sandbox: push expired on the operator side"}, nil
	}
	return operator.Outcome{State: operator.Pending, Detail: "sandbox: waiting for the payer"}, nil
}
