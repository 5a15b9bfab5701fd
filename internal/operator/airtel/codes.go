package airtel

import (
	"strings"

	"github.com/momopay/momopay/internal/operator"
)

// Transaction status codes of the enquiry and the callback.
const (
	statusSuccess    = "TS"
	statusFailed     = "TF"
	statusExpired    = "TE"
	statusInProgress = "TIP"
	statusAmbiguous  = "TA"
)

// Result codes (status.result_code) of Airtel's gateway.
const (
	codeOK             = "ESB000010"
	codeFailed         = "ESB000011"
	codeDuplicateID    = "ESB000041" // our transaction.id exists: an earlier push got through
	codeNoSuchPayment  = "ESB000045"
	codeCollectSuccess = "DP00800001001"
	codeInProcess      = "DP00800001006"
	codeAmbiguous      = "DP00800001000"
)

// failureReasons maps the collection response codes DP008000010xx to our
// failure reasons (docs/going-live.md; the wording of each is Airtel's).
var failureReasons = map[string]operator.FailureReason{
	"DP00800001002": operator.ReasonWrongPIN,            // incorrect PIN
	"DP00800001003": operator.ReasonLimitExceeded,       // over the balance or transaction limit
	"DP00800001004": operator.ReasonInvalidAmount,       // invalid amount
	"DP00800001005": operator.ReasonNoPIN,               // payer did not enter the PIN
	"DP00800001007": operator.ReasonInsufficientBalance, // not enough balance
	"DP00800001008": operator.ReasonRefused,             // refused by the payer
	"DP00800001009": operator.ReasonRefused,             // do not honour
	"DP00800001010": operator.ReasonNotPermitted,        // transaction not permitted
	"DP00800001024": operator.ReasonTimedOut,            // the payer did not answer in time
	"DP00800001029": operator.ReasonTimedOut,            // expired
}

// FailureReason maps an Airtel code to our failure reason: ReasonOther for
// a code we do not know.
func FailureReason(code string) operator.FailureReason {
	if r, ok := failureReasons[code]; ok {
		return r
	}
	return operator.ReasonOther
}

// pushRefused reports whether a push answer with status.success=false and
// this result code certainly means the push was not taken, so the payment
// can be forgotten and the merchant told 503. Unverified: Airtel documents
// the codes, not which of them can come back from the push itself; a code
// not listed here leaves the answer ambiguous (the payment stays PENDING
// and the enquiries settle it), which is the safe side.
func pushRefused(resultCode string) bool {
	switch resultCode {
	case codeFailed, "ESB000033", "ESB000034", "ESB000035", "ESB000036", "ESB000039":
		return true
	}
	return false
}

// pushInDoubt reports whether a push answer's response code or
// transaction status says the push may have been taken: in process
// (DP00800001006, TIP), ambiguous (DP00800001000, TA) or done
// (DP00800001001, TS). Such an answer is never a certain refusal, whatever
// its result code or success flag: answering 503 would free the reference,
// and the merchant's retry would push, and charge the payer, a second time.
func pushInDoubt(responseCode, txStatus string) bool {
	switch responseCode {
	case codeInProcess, codeAmbiguous, codeCollectSuccess:
		return true
	}
	switch strings.ToUpper(txStatus) {
	case statusInProgress, statusAmbiguous, statusSuccess:
		return true
	}
	return false
}

// pushDeclined reports whether a push answer with status.success=false
// carries a payer's failure (DP008000010xx: balance, PIN, limits, refusal),
// whatever its result code: the payment was asked for and failed, which
// the contract makes FAILED, not an outage to retry.
func pushDeclined(responseCode string) bool {
	_, declined := failureReasons[responseCode]
	return declined
}

// pushTaken reports whether a push answer says Airtel took the push.
func pushTaken(success bool, resultCode, responseCode string) bool {
	switch {
	case resultCode == codeDuplicateID:
		// Our transaction.id is already known: an earlier push of ours
		// (whose answer we lost) got through.
		return true
	case !success:
		return false
	}
	return resultCode == codeOK || resultCode == "" || responseCode == codeInProcess || responseCode == codeCollectSuccess
}

// outcomeOf maps a transaction status (TS, TF, TE, TIP, TA, anything else)
// with its response code to an operator.Outcome. Unknown statuses are
// Pending: keep asking, never guess.
func outcomeOf(status, responseCode, message, airtelMoneyID string) operator.Outcome {
	o := operator.Outcome{State: operator.Pending, Detail: message, Code: status, OperatorRef: airtelMoneyID}
	switch strings.ToUpper(status) {
	case statusSuccess:
		o.State = operator.Succeeded
	case statusFailed:
		o.State = operator.Failed
		o.Reason = operator.ReasonOther
		if strings.HasPrefix(responseCode, "DP008") {
			o.Code, o.Reason = responseCode, FailureReason(responseCode)
		}
	case statusExpired:
		o.State = operator.Expired
	}
	if o.Detail == "" {
		o.Detail = status
	}
	return o
}

// refundAnswer reads a refund answer: done when Airtel says it succeeded
// (TS or SUCCESS, or no status with no in-progress code), refused only
// when it certainly did not happen: status.success false with a failed
// transaction status, or a code that names why (a refusal of the gateway,
// no such payment, a payer-side failure). Anything else (TIP, PENDING, an
// in-progress or ambiguous code, an error "try later", a code we do not
// know) is neither: the refund's fate is unknown. Unverified: Airtel
// documents the codes, not which of them a refund can answer.
func refundAnswer(st statusBlock, txStatus string) (done, refused bool) {
	status := strings.ToUpper(txStatus)
	if st.Success {
		inProgress := st.ResponseCode == codeInProcess || st.ResponseCode == codeAmbiguous
		return status == statusSuccess || status == "SUCCESS" || status == "" && !inProgress, false
	}
	switch {
	case status == statusFailed || status == "FAILED":
		return false, true
	case status != "":
		return false, false // in progress, or a status we do not know
	case st.ResultCode == codeNoSuchPayment, pushRefused(st.ResultCode), pushDeclined(st.ResponseCode):
		return false, true
	}
	return false, false
}
