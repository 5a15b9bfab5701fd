// Package client is the Go SDK for merchants of momopay, the Mobile Money
// payment service for Airtel Money and Moov Money in Chad (XAF).
//
// It does two jobs for a merchant's server: calling the public API
// (create, read and list transactions) and receiving webhooks (verifying
// their signatures and processing each delivery once). It uses only the
// standard library and holds no state beyond configuration, so one Client can
// be shared by every goroutine.
//
// # Requesting a payment
//
//	c := client.New(os.Getenv("MOMOPAY_API_KEY"),
//		client.WithBaseURL("https://api.example.td"))
//	tx, err := c.CreateTransaction(ctx, client.CreateTransactionParams{
//		Reference:   "order-1042",
//		Amount:      2500, // XAF
//		Operator:    client.OperatorAirtel,
//		PhoneNumber: "+23566000000",
//	})
//
// The transaction starts PENDING; the payer confirms on their phone and the
// outcome arrives by webhook. The order reference is the idempotency key: the
// service never creates two payments for one reference, and the client turns
// a lost answer into the transaction it created (see CreateTransaction).
//
// # Errors and retries
//
// Every method fails with *Error, carrying the API's code, HTTP status,
// invalid fields, retry_after and request id. Match kinds with errors.Is and
// the Err sentinels (errors.Is(err, client.ErrNotFound)); read details with
// errors.As. When the API cannot be reached the code is NETWORK_ERROR and the
// transport error is wrapped, never returned bare.
//
// Transient failures (network errors, 429, 502, 503, 504) are retried up to
// WithMaxRetries times, waiting the retry_after the service asks for (capped
// by WithMaxRetryWait) and never past the context's deadline. Nothing else is
// retried, because repeating it would give the same answer.
//
// # Receiving webhooks
//
// Mount WebhookHandler on the URL registered in the dashboard, or call
// VerifyWebhook from your own handler with the raw, unparsed body. Both check
// X-Service-Signature and, when present, the Standard Webhooks headers that
// bind a timestamp to the body and so reject replays.
//
// # What it must not do
//
// The package must not hold business rules of the service (validation is the
// API's job, so new rules need no SDK release), must not depend on anything
// outside the standard library, and must never log or expose API keys or
// webhook secrets.
package client
