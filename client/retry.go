package client

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// defaultRetryWait is the pause when a retryable failure names no delay
// (a network error, or a 503 from a proxy without Retry-After).
const defaultRetryWait = time.Second

// retryDelay decides whether a failed attempt is tried again and after how
// long. Every request this client sends is safe to repeat: reads are
// idempotent, and a create is idempotent by its reference (a repeat meets 409
// DUPLICATE_REFERENCE, which CreateTransaction resolves). So the policy only
// asks whether the failure is transient:
//
//   - NETWORK_ERROR: the request may or may not have arrived; repeating is safe.
//   - 429, and 503 GATEWAY_UNAVAILABLE: the service asks us to come back after
//     retry_after.
//   - 502 and 504: a proxy in front of the service failed to reach it.
//
// Validation, authentication, not-found, duplicate and 500 answers are final:
// repeating them gives the same answer, as does a request the client could
// not build (INVALID_REQUEST).
//
// It never retries before the retry_after the service asked for: when that is
// longer than maxRetryWait, the failure is returned at once (with its
// RetryAfter) rather than retried early, since an early attempt is bound to
// be refused too. Nor does it sleep past the context's deadline: if the wait
// would outlast it, the failure is returned at once so the caller keeps the
// time it has left.
func (c *Client) retryDelay(ctx context.Context, err error, attempt int) (time.Duration, bool) {
	if attempt > c.maxRetries || ctx.Err() != nil {
		return 0, false
	}
	var e *Error
	if !errors.As(err, &e) {
		return 0, false
	}
	switch {
	case e.Code == CodeNetwork:
	case e.Status == http.StatusTooManyRequests,
		e.Status == http.StatusServiceUnavailable,
		e.Status == http.StatusBadGateway,
		e.Status == http.StatusGatewayTimeout:
	default:
		return 0, false
	}
	if e.RetryAfter > c.maxRetryWait {
		return 0, false
	}
	wait := e.RetryAfter
	if wait <= 0 {
		wait = min(defaultRetryWait, c.maxRetryWait)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return 0, false
	}
	return wait, true
}

// mayHaveArrived reports whether a failed attempt that is tried again may
// have been acted on all the same: a network error or a proxy's 502 or 504
// (the answer, not the request, may be what was lost), or a 503 that is
// not the service's own. The service's 429, and its 503
// GATEWAY_UNAVAILABLE, which keeps nothing, come before anything is done.
// Only after such an attempt can a create's later 409 be its own
// (CreateTransaction).
func mayHaveArrived(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return true
	}
	switch {
	case e.Status == http.StatusTooManyRequests:
		return false
	case e.Status == http.StatusServiceUnavailable && e.Code == CodeGatewayUnavailable:
		return false
	}
	return true
}

// sleepContext waits for d or until ctx ends, whichever comes first.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
