// Package airtel is the Airtel Money Open API adapter (REST, JSON): an
// OAuth client-credentials token, the USSD push (collection), the status
// enquiry, signed callbacks and full refunds, for Airtel Tchad (X-Country
// TD, X-Currency XAF).
//
// It implements operator.Operator, CallbackReader, PollScheduler and
// Refunder. It talks only to Airtel: it never touches the database, and it
// never logs a credential or a token. Sandbox mode runs it unchanged
// against the simulator of package airtelsim.
//
// What Airtel's public documents leave uncertain (the callback hash, the
// refusal codes of the push, the refund answer) is decided in codes.go and
// callback.go, each marked "unverified", so it can be corrected in one
// place once Airtel Tchad's own document is at hand.
package airtel
