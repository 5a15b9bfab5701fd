// Package operator defines what momopay needs from a Mobile Money operator
// and the adapters that provide it: sandbox (simulated), and later Airtel and
// Moov. It must not touch the database: it only talks to operators.
//
// The interface is shaped by what the real operators offer
// (shared/reference/operators.md): both take a USSD push and answer a status
// enquiry by our own transaction id; Airtel also sends callbacks, read by an
// operator that implements CallbackReader and settled through the api.
package operator

import (
	"context"
	"errors"
	"time"
)

// Payment is what an operator is told about, and asked about, a payment.
// Ref is our internal_ref: operators key their records on the caller's id
// (Airtel transaction.id, Moov externaldata1), so a status enquiry works even
// when the answer to the push was lost.
type Payment struct {
	Ref string
	// MerchantID is whose payment it is. Operators never see it; the
	// sandbox's circuit breaker keeps one circuit per merchant with it.
	MerchantID  string
	Amount      int64
	PhoneNumber string
	Description string
	// RequestedAt is when the payment was created; the sandbox derives its
	// simulated payer's behaviour from it, so it needs no state of its own.
	RequestedAt time.Time
}

// State is an operator's view of a payment.
type State string

// The states an operator can report. Pending covers "in progress",
// "ambiguous" and unknown codes: keep asking, never guess.
const (
	Pending   State = "PENDING"
	Succeeded State = "SUCCEEDED"
	Failed    State = "FAILED"
	Expired   State = "EXPIRED"
)

// Outcome is an operator's answer about a payment.
type Outcome struct {
	State State
	// Detail is the operator's own code or message, kept for reconciliation.
	Detail string
}

// Operator is one Mobile Money operator.
type Operator interface {
	// RequestPayment sends the payment request (USSD push) to the payer.
	// An error wrapping ErrUnavailable means the operator certainly did not
	// take the request; any other error is ambiguous (it may have).
	RequestPayment(ctx context.Context, p Payment) error
	// PaymentStatus asks the operator where the payment stands.
	PaymentStatus(ctx context.Context, p Payment) (Outcome, error)
}

// ErrUnavailable marks a push the operator refused to take (down, 5xx,
// circuit open): nothing happened, so the caller may keep nothing.
var ErrUnavailable = errors.New("operator unavailable")

// UnavailableError is ErrUnavailable with the delay after which trying again
// makes sense.
type UnavailableError struct {
	RetryAfter time.Duration
	Cause      error
}

func (e *UnavailableError) Error() string {
	if e.Cause != nil {
		return "operator unavailable: " + e.Cause.Error()
	}
	return "operator unavailable"
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Cause }

// Callback is an operator's report, pushed to us, about one payment.
type Callback struct {
	Ref     string
	Outcome Outcome
}

// CallbackReader is implemented by an operator that reports outcomes by
// calling us back (Airtel; Moov has no callbacks and is only polled). The
// api package routes POST /callbacks/{operator} to it. ReadCallback must
// authenticate the request before trusting a word of it: a forged callback
// would settle a payment. Callbacks can be lost, so polling never stops
// because of them.
//
// The headers are a plain map (an http.Header passes as is) so that this
// package, and the payment domain that imports it, do not import net/http.
type CallbackReader interface {
	ReadCallback(header map[string][]string, body []byte) (Callback, error)
}

// ErrCallbackRejected marks a callback that failed authentication or could
// not be read; the caller answers it with a 4xx and settles nothing.
var ErrCallbackRejected = errors.New("callback rejected")
