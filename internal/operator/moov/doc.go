// Package moov is the Moov Money adapter (operator.Operator) and a
// simulator of Moov's merchant API for the sandbox and tests.
//
// Moov's merchant API is SOAP: PushWithPending sends the USSD push and
// getTransactionStatus tells the outcome; there are no callbacks, so
// payments are settled by polling only. Moov Tchad publishes no document:
// the protocol here follows the community SDKs for Moov Benin/Togo, and
// every detail not confirmed for Tchad is marked UNVERIFIED where it lives
// (mostly soap.go, token.go and codes.go).
//
// The adapter never reports FAILED unless Moov said so with a failure
// code: network errors, timeouts, HTTP errors, SOAP faults and unreadable
// answers leave the payment PENDING, and only a push Moov certainly did not
// take is an operator.UnavailableError. It must not touch the database, and
// it never logs the token or the credentials it is built from.
package moov
