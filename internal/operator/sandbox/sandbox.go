// Package sandbox names the sandbox's scripted payer numbers and timings,
// shared by the operator simulators (airtel/airtelsim, moov) and by the
// tests and docs that use them. In sandbox mode the service runs the real
// Airtel and Moov adapters against those simulators, which speak the
// operators' wire protocols; this package holds no behaviour of its own.
package sandbox

import "time"

// The payer numbers with a scripted behaviour (docs/sandbox.md), the same
// for both operators.
const (
	PhoneSuccess      = "+23560000001" // confirms after AnswerDelay (Airtel: by callback)
	PhoneFailure      = "+23560000002" // refuses after AnswerDelay (Airtel: by callback)
	PhoneNoAnswer     = "+23560000003" // never answers: TIMEOUT at expires_at
	PhoneExpired      = "+23560000004" // the operator reports the request expired
	PhoneUnavailable  = "+23560000005" // the operator refuses the push: 503
	PhoneLostCallback = "+23560000006" // confirms, but no callback: polling only
)

// AnswerDelay is how long the scripted payers take to answer.
const AnswerDelay = 2 * time.Second

// UnavailableRetryAfter is the retry_after of the simulated outage: short,
// so that demos and client tests of retries stay quick.
const UnavailableRetryAfter = 2 * time.Second
