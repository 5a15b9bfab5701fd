// Package operator defines what momopay needs from a Mobile Money operator
// and the adapters that provide it: sandbox (simulated), and later Airtel and
// Moov. It must not touch the database: it only talks to operators.
//
// The interface is shaped by what the real operators offer
// (docs/going-live.md records what is known of each): both take a USSD push and answer a status
// enquiry by our own transaction id; Airtel also sends callbacks, read by an
// operator that implements CallbackReader and settled through the api.
package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// RefPrefix and RefLength give the form of an internal_ref: "SERVICE-" and
// 8 upper-case letters or digits.
const (
	RefPrefix = "SERVICE-"
	RefLength = len(RefPrefix) + 8
)

// ValidRef reports whether s has the form of an internal_ref. Adapters use
// it to tell our ids from an operator's in the answers they read; the
// store, to answer a lookup by anything else without a query.
func ValidRef(s string) bool {
	rest, ok := strings.CutPrefix(s, RefPrefix)
	return ok && len(s) == RefLength && strings.Trim(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == ""
}

// Clip shortens text to at most n bytes, cut at a character boundary: an
// operator's ids and messages as they are logged or stored, and a payer
// message as an operator takes it.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Payment is what an operator is told about, and asked about, a payment.
// Ref is our internal_ref: operators key their records on the caller's id
// (Airtel transaction.id, Moov externaldata1), so a status enquiry works even
// when the answer to the push was lost.
type Payment struct {
	Ref string
	// MerchantID is whose payment it is. Operators never see it; the
	// sandbox's circuit breaker keeps one circuit per merchant with it.
	MerchantID string
	// TransactionID is our transaction id. Operators never see it either;
	// adapters log it with each call, so a call can be traced to a payment.
	TransactionID string
	Amount        int64
	PhoneNumber   string
	Description   string
	// RequestedAt is when the payment was created; the sandbox derives its
	// simulated payer's behaviour from it, so it needs no state of its own.
	RequestedAt time.Time
	// OperatorRef is the operator's own id of the payment as far as we
	// know it (what RequestPayment returned, or an outcome's
	// OperatorRef), kept with the transaction; "" when none came.
	OperatorRef string
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
	// Detail is the operator's own message, kept for reconciliation.
	Detail string
	// Code is the operator's own status or failure code as it sent it
	// (Airtel "DP00800001007", Moov "10"), kept with the transaction.
	Code string
	// Reason says in our words why a payment failed; "" unless Failed (and
	// ReasonOther when the operator's code is not one we know).
	Reason FailureReason
	// OperatorRef is the operator's own id of the payment (Airtel's
	// airtel_money_id, Moov's transid), needed to refund it; "" when the
	// answer carried none.
	OperatorRef string
}

// FailureReason is why a payment failed, the same words for every operator.
// It is kept with the transaction and shown to the service's operators (CLI,
// dashboard), never in the /v1 objects or webhooks, which the contract fixes.
type FailureReason string

// The failure reasons adapters map their operators' codes to.
const (
	ReasonWrongPIN            FailureReason = "wrong_pin"
	ReasonInsufficientBalance FailureReason = "insufficient_balance"
	ReasonLimitExceeded       FailureReason = "limit_exceeded"
	ReasonInvalidAmount       FailureReason = "invalid_amount"
	ReasonNoPIN               FailureReason = "payer_did_not_enter_pin"
	ReasonRefused             FailureReason = "refused"
	ReasonNotPermitted        FailureReason = "not_permitted"
	ReasonTimedOut            FailureReason = "timed_out"
	ReasonPayerNotRegistered  FailureReason = "payer_not_registered"
	ReasonOther               FailureReason = "other"
)

// Operator is one Mobile Money operator.
type Operator interface {
	// RequestPayment sends the payment request (USSD push) to the payer.
	// It returns the operator's own id of the payment when its answer
	// carried one that later calls need (Moov's referenceid, which its
	// status enquiry takes): the caller keeps it with the transaction and
	// passes it back in Payment.OperatorRef, so that any instance, after
	// any restart, can ask about the payment.
	// An error wrapping ErrUnavailable means the operator certainly did not
	// take the request; a *DeclinedError that it answered with the
	// payment's failure; any other error is ambiguous (it may have).
	RequestPayment(ctx context.Context, p Payment) (operatorRef string, err error)
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

// DeclinedError is a push the operator answered with a final failure that
// belongs to the payer or the payment (balance, limits, PIN, a refusal),
// not to an outage. The payment was asked for and failed: the contract
// makes that FAILED, not 503. The caller keeps the payment and settles it
// FAILED with Outcome at once, and a circuit breaker does not count it (one
// payer's empty wallet must not stop every merchant's payments).
type DeclinedError struct {
	Outcome Outcome
}

func (e *DeclinedError) Error() string {
	return fmt.Sprintf("payment declined by the operator: %s %s", e.Outcome.Code, e.Outcome.Detail)
}

// Callback is an operator's report, pushed to us, about one payment.
type Callback struct {
	Ref     string
	Outcome Outcome
	// Unverified marks a callback whose authenticity could not be checked
	// (no callback secret configured, or no hash sent): it is only a hint
	// that the payment moved, and the caller asks the operator at once
	// instead of believing it. A callback that fails its check is never
	// Unverified: ReadCallback refuses it with ErrCallbackRejected.
	Unverified bool
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

// PollScheduler is implemented by an operator that chooses its own status
// enquiry schedule (Airtel relies on its callback first, Moov on polling
// only). Operators without one get the payment package's default schedule.
type PollScheduler interface {
	// NextPoll returns how long to wait before the next status enquiry of
	// a payment whose push is age old. Before the first enquiry is due it
	// returns the time left until it.
	NextPoll(age time.Duration) time.Duration
}

// Refunder is implemented by an operator that can give a successful
// payment's money back to the payer (Airtel: full refunds only).
type Refunder interface {
	// Refund asks for a full refund of the payment the operator knows as
	// operatorRef. An error wrapping ErrUnavailable means the request
	// certainly never reached the operator (no connection, no access
	// token): nothing happened. Any other error means the answer is
	// unknown (a timeout, a 5xx...): the refund may or may not have
	// happened, and a person must check.
	Refund(ctx context.Context, p Payment, operatorRef string) (RefundOutcome, error)
}

// RefundOutcome is an operator's certain answer to a refund request.
type RefundOutcome struct {
	// Refunded is true when the operator says the money went back.
	Refunded bool
	// Code and Detail are the operator's own code and message.
	Code   string
	Detail string
	// OperatorRef is the operator's id of the refund, when it gave one.
	OperatorRef string
}

// SandboxPayer is implemented by the operator simulators of sandbox mode:
// it plays the payer of a pushed payment, who accepts (approve) or refuses
// it on the phone. The simulator then answers status enquiries, and sends
// its callback if its operator has callbacks, as the real operator would.
type SandboxPayer interface {
	AnswerPayment(ctx context.Context, ref string, approve bool) error
}

// Unwrapper is implemented by an operator that wraps another (the circuit
// breaker), so that the optional interfaces of the one inside stay
// reachable through As.
type Unwrapper interface {
	Unwrap() Operator
}

// As finds, in op or the operators it wraps, one implementing T (Refunder,
// PollScheduler, SandboxPayer, CallbackReader).
func As[T any](op Operator) (T, bool) {
	for op != nil {
		if t, ok := op.(T); ok {
			return t, true
		}
		u, ok := op.(Unwrapper)
		if !ok {
			break
		}
		op = u.Unwrap()
	}
	var zero T
	return zero, false
}
