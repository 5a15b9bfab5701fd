// Package client is the Go SDK for merchants of momopay, the Mobile Money
// payment service for Airtel Money and Moov Money in Chad (XAF).
//
// It does two jobs for a merchant's server: calling the public API
// (create, read and list transactions) and receiving webhooks (verifying
// their signatures and processing each delivery once). It uses only the
// standard library and holds no state beyond configuration, so one Client can
// be shared by every goroutine.
//
// The package lives in the module github.com/momopay/momopay; a merchant's
// module depends on it with
//
//	go get github.com/momopay/momopay/client@VERSION
//
// or, against a local checkout, with a replace directive in go.mod:
//
//	require github.com/momopay/momopay v0.0.0
//	replace github.com/momopay/momopay => ../momopay
//
// # Requesting a payment
//
//	c := client.New(os.Getenv("MOMOPAY_API_KEY"),
//		client.WithBaseURL("https://api.example.td"))
//	tx, err := c.CreateTransaction(ctx, client.CreateTransactionParams{
//		Reference:   "order-1042",
//		Amount:      2500, // whole XAF, 100 to 10,000,000
//		Operator:    client.OperatorAirtel,
//		PhoneNumber: "+23566000000",
//	})
//
// The transaction starts PENDING; the payer confirms on their phone and the
// outcome arrives by webhook. The order reference is the idempotency key: the
// service never creates two payments for one reference, and the client turns
// a lost answer into the transaction it created (see CreateTransaction). The
// package Example shows a whole flow: it requests a payment, waits for
// the answer and lists the day's payments. Against a server in sandbox mode,
// the payer number chooses the outcome: +23560000001 confirms and
// +23560000002 refuses after about 2 seconds, +23560000005 gives
// GATEWAY_UNAVAILABLE (see docs/sandbox.md in the repository).
//
// # Errors and retries
//
// Every method fails with *Error, carrying the API's code, HTTP status,
// invalid fields, retry_after and request id. Match kinds with errors.Is and
// the Err sentinels (errors.Is(err, client.ErrNotFound)); read details with
// errors.As. When the API cannot be reached the code is NETWORK_ERROR and the
// transport error is wrapped, never returned bare; a request the client
// cannot build (a malformed base URL) is INVALID_REQUEST, and nothing is
// sent.
//
// Transient failures (network errors, 429, 502, 503, 504) are retried up to
// WithMaxRetries times, waiting the retry_after the service asks for and never
// past the context's deadline. A retry_after longer than WithMaxRetryWait
// (10 s by default) is not cut short: the failure is returned at once with
// its RetryAfter, as an early retry would be refused too. Nothing else is
// retried, because repeating it would give the same answer. If the context
// ends while the client waits to retry, the last failure is returned and
// also matches the context's error (errors.Is(err, context.Canceled)).
//
// # Receiving webhooks
//
// Mount WebhookHandler on the URL registered for the merchant (see
// Example_webhookReceiver), or call VerifyWebhook from your own handler with
// the raw, unparsed body. Both require the Standard Webhooks headers, which
// momopay sends on every delivery, signed with the bytes whose base64 follows
// "whsec_": they bind a timestamp and the delivery id to the body, so a
// delivery replayed later, or stripped of them, is refused. They do not
// check X-Service-Signature, which adds nothing to that and, after a secret
// rotation, is made with the new secret only: with webhook-signature, a
// receiver keeps verifying with the previous secret for 24 hours.
// Deliveries are at least once; WebhookHandler skips a delivery id (the
// signed webhook-id) it has already handled.
//
// # What it must not do
//
// The package must not hold business rules of the service (validation is the
// API's job, so new rules need no SDK release), must not depend on anything
// outside the standard library, and must never log or expose API keys or
// webhook secrets.
package client
