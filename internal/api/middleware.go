package api

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

type ctxKey int

const (
	ctxRequestID ctxKey = iota
	ctxMerchantID
	ctxLogMerchant
)

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxRequestID).(string)
	return id
}

func merchantID(ctx context.Context) string {
	id, _ := ctx.Value(ctxMerchantID).(string)
	return id
}

func itoa(n int) string { return strconv.Itoa(n) }

// acceptableRequestID bounds a caller-chosen X-Request-Id, so that logs
// cannot be flooded or forged with control characters.
var acceptableRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// statusRecorder remembers the status for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (flushing and
// per-batch write deadlines of the dashboard's streamed export).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// withRequest gives every request an id (the caller's X-Request-Id when it
// is sane), echoes it, turns panics into INTERNAL_ERROR, logs one line per
// request and hands its route, method, status and duration to observe (when
// set). The Authorization header, the query string and bodies are never
// logged.
func withRequest(log *slog.Logger, observe ObserveRequest, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !acceptableRequestID.MatchString(id) {
			id = uuid.NewString()
		}
		w.Header().Set("X-Request-Id", id)
		// Every answer is JSON (or, for the dashboard's pages, HTML with its
		// own headers): never to be sniffed into something a browser runs.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// requireKey fills logMerchant, deeper in the chain, for this log line.
		var logMerchant string
		ctx := context.WithValue(r.Context(), ctxRequestID, id)
		r = r.WithContext(context.WithValue(ctx, ctxLogMerchant, &logMerchant))
		rec := &statusRecorder{ResponseWriter: w}
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Error("panic in handler", "request_id", id, "panic", p)
				if rec.status == 0 {
					writeProblem(rec, http.StatusInternalServerError, codeInternal, "an internal error occurred; quote the X-Request-Id header when reporting it")
				}
			}
			elapsed, route := time.Since(start), routeOf(r)
			if observe != nil {
				observe(route, r.Method, rec.status, elapsed)
			}
			log.Log(r.Context(), requestLevel(r.Method, rec.status), "request", "request_id", id, "method", r.Method,
				"route", route, "path", r.URL.Path, "status", rec.status, "duration_ms", elapsed.Milliseconds(), "merchant_id", logMerchant)
		}()
		next.ServeHTTP(rec, r)
	})
}

// ObserveRequest is told about every answered request: its route pattern
// (bounded: one of the routes table's patterns), method, status and
// duration. The metrics package implements it.
type ObserveRequest func(route, method string, status int, d time.Duration)

// routeOf is the routes-table pattern that served r, without its method
// ("/v1/transactions/{id}"): never the raw path, which holds ids.
func routeOf(r *http.Request) string {
	p := r.Pattern
	if _, path, ok := strings.Cut(p, " "); ok {
		p = path
	}
	if p == "" {
		return "unmatched"
	}
	return p
}

// requestLevel logs reads that succeeded at DEBUG: merchants poll
// transactions and load balancers probe /healthz many times a minute, and
// those lines would bury the rest. Writes (payments, callbacks) and every
// refusal stay at INFO, server errors at ERROR: what support is asked about
// (a request id quoted from an error, a payment that was created or not)
// is always in the log at the default level.
func requestLevel(method string, status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case status >= 400:
		return slog.LevelInfo
	case method == http.MethodGet || method == http.MethodHead:
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// KeyAuthenticator resolves an API key to its own id and its merchant's
// (both "" when the key is unknown or revoked).
type KeyAuthenticator interface {
	Identify(ctx context.Context, key string, now time.Time) (keyID, merchantID string, err error)
}

// requireKey admits requests carrying a live API key (contract §5) and
// applies the per-key rate limit. Failed authentications spend tokens of
// the client address's own limit, and an address with none left is
// answered 429 before any database lookup, so a flood of guessed keys
// costs the database nothing.
//
// A valid key sent from such an address waits too: it cannot be told from
// a guess without the very lookup the limit spares. The wait is short (the
// bucket refills at AuthFailureLimit.PerSecond), and a merchant's server
// that sends its own key right never spends these tokens, so only clients
// sharing an address with the guesser notice.
func (s *Server) requireKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, cancel := withBudget(r)
		defer cancel()
		now, addr := s.now(), clientAddress(r.RemoteAddr)
		if wait, out := s.authFailures.empty(addr, now); out {
			writeRateLimited(w, wait, "too many failed authentications from this address; retry after retry_after seconds")
			return
		}
		scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
			s.authFailures.take(addr, now)
			writeProblem(w, http.StatusUnauthorized, codeUnauthorized, "missing API key: send Authorization: Bearer <API_KEY>")
			return
		}
		keyID, merchant, err := s.keys.Identify(r.Context(), strings.TrimSpace(key), now)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if merchant == "" {
			s.authFailures.take(addr, now)
			writeProblem(w, http.StatusUnauthorized, codeUnauthorized, "invalid or revoked API key")
			return
		}
		if wait, ok := s.keyLimits.Take(r.Context(), keyID, now); !ok {
			writeRateLimited(w, wait, "too many requests for this API key; retry after retry_after seconds")
			return
		}
		if slot, ok := r.Context().Value(ctxLogMerchant).(*string); ok {
			*slot = merchant
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxMerchantID, merchant)))
	})
}

func writeRateLimited(w http.ResponseWriter, wait time.Duration, message string) {
	body := errorBody{Error: errorObject{Code: codeRateLimited, Status: http.StatusTooManyRequests, Message: message}}
	body.Error.RetryAfter = retryAfterSeconds(w, wait.Seconds())
	writeJSON(w, http.StatusTooManyRequests, body)
}
