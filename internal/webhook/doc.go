// Package webhook delivers the outbound events of section 6 of the contract:
// merchants' endpoints and their signing secrets, the transactional outbox
// that queues one delivery per endpoint when a payment settles, signed
// attempts on the contract's retry schedule, manual re-sends and the test
// event. It owns the webhook_endpoints, webhook_deliveries and
// webhook_attempts tables, and every query it makes is scoped by merchant.
//
// It must not decide payment state: which event a status causes is
// payment.Status.Event, and the payment store calls Enqueue inside its own
// settling transaction. The Dispatcher (dispatch.go) runs each pending
// delivery's attempts when they are due, at most a few per endpoint at
// once (the per-endpoint fairness). No database
// transaction or connection is held while a receiver answers, so a slow
// endpoint costs one worker for at most the 10-second timeout.
//
// Every attempt is written to the history before its POST leaves (in the
// transaction that claims it) and completed afterwards, so an attempt whose
// process dies is still listed, as interrupted, and counts among the five.
// Manual attempts (Resend) and test events are recorded the same way.
//
// Signing (sign.go) and the hardened HTTP client with its URL and address
// checks (transport.go) are pure and make each attempt verifiable for the
// receiver and safe for the service.
package webhook
