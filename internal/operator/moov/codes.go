package moov

import (
	"fmt"
	"strconv"

	"github.com/momopay/momopay/internal/operator"
)

// Moov's status codes (the Benin/Togo SDKs' table; UNVERIFIED for Tchad).
// Codes not listed here are unknown: logged, and the payment keeps PENDING.
const (
	codeCompleted     = 0
	codeNotAllowed1   = 1
	codeNotAllowed2   = 2
	codeBadNumber     = 3
	codeUnauthorised  = 4
	codeParameters    = 91
	codePushExpired   = 92
	codeNoTransaction = 94
	codeFailed        = 95
	codeBadCredential = 98
	codeBusy          = 99
	codeBusyToo       = -1
	codeNotRegistered = 555
	codePending       = 100
)

// failures are the codes that end a payment as FAILED, with what they
// mean (kept in the outcome's detail) and our reason.
var failures = map[int]string{
	10:                "insufficient funds",
	11:                "amount above the allowed maximum",
	12:                "amount below the allowed minimum",
	13:                "daily amount limit reached",
	14:                "monthly amount limit reached",
	15:                "daily number of transactions reached",
	16:                "monthly number of transactions reached",
	17:                "amount below what the receiver may receive",
	18:                "receiver's maximum balance reached",
	19:                "payer's daily transaction limit reached",
	20:                "payer's monthly transaction limit reached",
	codeFailed:        "transaction failed",
	codeNotRegistered: "payer not registered with Moov Money",
	// 3 is only met as an answer to a push: the number is not a Moov one.
	codeBadNumber: "number not valid",
}

// reasonOf maps a failure code to our words for it.
func reasonOf(code int) operator.FailureReason {
	switch {
	case code == 10:
		return operator.ReasonInsufficientBalance
	case code == 12 || code == 17:
		return operator.ReasonInvalidAmount
	case code == 11 || (code >= 13 && code <= 20):
		return operator.ReasonLimitExceeded
	case code == codeNotRegistered:
		return operator.ReasonPayerNotRegistered
	}
	return operator.ReasonOther
}

// outcomeOf is the operator.Outcome of a getTransactionStatus answer.
func outcomeOf(a answer) operator.Outcome {
	code, _ := a.code()
	o := operator.Outcome{State: stateOf(code), Detail: detail(code, a.Description),
		Code: strconv.Itoa(code), OperatorRef: a.ReferenceID}
	if o.State == operator.Failed {
		o.Reason = reasonOf(code)
	}
	return o
}

// configErrors are answers that mean our account or request is wrong, not
// the payment: an operator of the service must act.
var configErrors = map[int]string{
	codeNotAllowed1:   "method not allowed for this account",
	codeNotAllowed2:   "transaction not allowed for this account",
	codeUnauthorised:  "unauthorised",
	codeParameters:    "parameters incomplete",
	codeBadCredential: "invalid credentials",
}

// detail is the text kept with an outcome: Moov's code and what it means.
func detail(code int, description string) string {
	what := failures[code]
	switch {
	case what == "" && configErrors[code] != "":
		what = configErrors[code]
	case code == codeCompleted:
		what = "completed"
	case code == codePending:
		what = "pending"
	case code == codePushExpired:
		what = "push timed out or cancelled"
	case code == codeNoTransaction:
		what = "no such transaction"
	case code == codeBusy, code == codeBusyToo:
		what = "system busy"
	}
	if what == "" {
		what = "unknown status"
	}
	if description != "" {
		return fmt.Sprintf("moov %d: %s (%s)", code, what, description)
	}
	return fmt.Sprintf("moov %d: %s", code, what)
}

// stateOf maps a getTransactionStatus code to an operator state; Pending
// covers 100, 94, 98, busy and unknown codes (the caller logs those).
func stateOf(code int) operator.State {
	switch {
	case code == codeCompleted:
		return operator.Succeeded
	case code == codePushExpired:
		return operator.Expired
	case failures[code] != "" && code != codeBadNumber:
		return operator.Failed
	}
	return operator.Pending
}
