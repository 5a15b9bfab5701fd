package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// databaseRetryAfter is the retry_after of a request refused because the
// database is out of reach. A PostgreSQL restart or fail-over takes a few
// seconds; asking for more would only slow clients down once it is back.
const databaseRetryAfter = 2 * time.Second

// requestBudget bounds how long an API request may wait for the database
// (and for a concurrent create's push, pushTimeout and its margin: 20 s),
// so that it is answered 503 rather than cut off by the server's 30 s write
// timeout. A database that refuses connections fails at once; this is for
// one that makes requests queue: a SQLite file whose write lock another
// process holds, where every waiter ahead of a request, job workers
// included, first waits out the busy timeout.
const requestBudget = 25 * time.Second

// WithBudget gives r's context the request budget; the dashboard's pages
// take it too.
func WithBudget(r *http.Request) (*http.Request, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), requestBudget)
	return r.WithContext(ctx), cancel
}

// ErrStopping is the cause with which a stopping server ends the requests
// still waiting shortly before its grace ends: each is answered 503 (the
// database out of reach, as far as it is concerned) rather than cut off.
var ErrStopping = errors.New("the server is stopping")

// budgetSpent reports whether err is r's own budget running out, or r
// ended by a stopping server; a client that hangs up cancels the context
// instead.
func budgetSpent(r *http.Request, err error) bool {
	if errors.Is(context.Cause(r.Context()), ErrStopping) {
		return errors.Is(err, context.Canceled) || errors.Is(err, ErrStopping)
	}
	return errors.Is(err, context.DeadlineExceeded) && errors.Is(r.Context().Err(), context.DeadlineExceeded)
}

// databaseUnavailable is the answer to a request that met a database out of
// reach (store.Unavailable): 503 GATEWAY_UNAVAILABLE with retry_after, the
// contract's "temporarily unavailable; retry later". The request changed
// nothing that was acknowledged: a create either committed its one database
// transaction or did not, and a retry with the same reference says which
// (201, or 409 naming the transaction).
func databaseUnavailable(r *http.Request, log *slog.Logger, err error) *payment.Error {
	NoteDatabaseOut(r, log, err)
	return &payment.Error{
		Code:       payment.EUNAVAILABLE,
		Message:    "the service is temporarily unavailable; retry after retry_after seconds (with the same reference for a payment)",
		RetryAfter: databaseRetryAfter,
	}
}

// DatabaseOut reports whether err means that the database was out of reach
// for r: store.Unavailable, or r's budget spent waiting for it. Such a
// request may succeed when sent again, and is answered 503, not 500.
func DatabaseOut(r *http.Request, err error) bool {
	return store.Unavailable(err) || budgetSpent(r, err)
}

// NoteDatabaseOut logs a request answered 503 for the database, at warn
// and at most once a second for the API and the dashboard together.
func NoteDatabaseOut(r *http.Request, log *slog.Logger, err error) {
	if n, ok := outageLog.due(time.Now()); ok {
		log.Warn("database unavailable; answered 503", "request_id", requestID(r.Context()), "method", r.Method, "path", r.URL.Path,
			"err", err, "also_answered_503_since_last_line", n)
	}
}

// outageLog keeps an outage from writing one line per refused request:
// every client retrying at once would flood the log with the same cause.
var outageLog throttle

// throttle lets one event through per second and counts the others.
type throttle struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// due reports whether an event at now may be logged and, if so, how many
// were held back since the last one logged.
func (t *throttle) due(now time.Time) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.last) < time.Second {
		t.suppressed++
		return 0, false
	}
	n := t.suppressed
	t.last, t.suppressed = now, 0
	return n, true
}
