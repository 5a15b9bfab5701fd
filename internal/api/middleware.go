package api

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/store"
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
		// NoteMerchant fills logMerchant, deeper in the chain, for this log line.
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
			log.Log(r.Context(), requestLevel(r.Method, rec.status), "request", "request_id", id, "method", clip(r.Method, maxLoggedMethod),
				"route", route, "path", clip(r.URL.Path, maxLoggedPath), "status", rec.status, "duration_ms", elapsed.Milliseconds(), "merchant_id", logMerchant)
		}()
		next.ServeHTTP(rec, r)
	})
}

// maxLoggedPath and maxLoggedMethod bound what a request line keeps of
// the path and method, which anyone can send without a key: Go's server
// takes a method of any length and a path up to the 1 MiB of headers, and
// each request is logged, so an unbounded line would let a caller write
// the log's disk full at the rate it sends. Every route's path is far
// shorter; the route pattern is logged whole.
const (
	maxLoggedPath   = 256
	maxLoggedMethod = 16
)

// clip shortens s to n bytes for a log line or an answer, saying how long
// it was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(s[:n], ""), len(s))
}

// NoteMerchant names the merchant a request acts for in its request log
// line: requireKey calls it for the API, the dashboard once it knows the
// session's merchant.
func NoteMerchant(ctx context.Context, merchantID string) {
	if slot, ok := ctx.Value(ctxLogMerchant).(*string); ok {
		*slot = merchantID
	}
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
// is always in the log at the default level. A 503 is WARN: it says an
// operator or the database is unavailable for now, which the caller is
// told to retry and the metrics and the breaker's own lines report; at
// ERROR, an operator's outage would write an ERROR line per payment.
func requestLevel(method string, status int) slog.Level {
	switch {
	case status == http.StatusServiceUnavailable:
		return slog.LevelWarn
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
// applies the rate limit, one budget per merchant whatever its number of
// keys: a budget per key let a merchant that made a hundred keys send a
// hundred times the limit, and slow every other merchant down.
//
// A missing key, or one without the shape of a key, is answered 401
// at once: no lookup is made for it, so there is nothing to limit. A
// well-formed key that the lookup does not find (a guess, or a revoked
// key) spends a token of the client address's own limit, and an address
// with none left is answered 429 before any database lookup, so a flood of
// guessed keys costs the database nothing (identify). A key that
// authenticated in this process before (knownKeys) is still looked up from
// such an address, so a merchant's server sharing an address with the
// guesser (a proxy, a NAT) keeps working; only a valid key never used here
// yet waits, as it cannot be told from a guess without the very lookup the
// limit spares.
func (s *Server) requireKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, cancel := WithBudget(r)
		defer cancel()
		if len(r.Header.Values("Authorization")) > 1 {
			// Which one counts would be a guess, and a proxy may guess
			// otherwise.
			writeProblem(w, http.StatusUnauthorized, codeUnauthorized, "send one Authorization header, not several")
			return
		}
		header := r.Header.Get("Authorization")
		scheme, key, ok := strings.Cut(header, " ")
		key = strings.TrimSpace(key)
		switch {
		case header == "":
			writeProblem(w, http.StatusUnauthorized, codeUnauthorized, "missing API key: send Authorization: Bearer <API_KEY>")
			return
		case !ok || !strings.EqualFold(scheme, "Bearer") || key == "":
			writeProblem(w, http.StatusUnauthorized, codeUnauthorized, "the Authorization header must be Bearer followed by the API key: Authorization: Bearer <API_KEY>")
			return
		}
		if !store.WellFormedKey(key) {
			writeProblem(w, http.StatusUnauthorized, codeUnauthorized, "invalid or revoked API key")
			return
		}
		now, digest := s.now(), sha256.Sum256([]byte(key))
		merchant, wait, err := s.identify(r, key, digest, now)
		if wait > 0 {
			writeRateLimited(w, wait, "too many failed authentications from this address; retry after retry_after seconds")
			return
		}
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if merchant == "" {
			s.knownKeys.forget(digest)
			writeProblem(w, http.StatusUnauthorized, codeUnauthorized, "invalid or revoked API key")
			return
		}
		s.knownKeys.add(digest)
		NoteMerchant(r.Context(), merchant) // a 429 below is the merchant's too
		if wait, ok := s.keyLimits.Take(r.Context(), merchant, now); !ok {
			writeRateLimited(w, wait, "too many requests for this merchant's API keys; retry after retry_after seconds")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxMerchantID, merchant)))
	})
}

// identify looks the request's key up. A key that has not authenticated
// in this process (knownKeys) spends a token of the client address's
// failure budget before its lookup, and gives it back if it proves good:
// keys sent at once then cannot all reach the database before the first
// has failed. Requests that present one unknown key at once share its
// lookup and its token (lookups), so a merchant's burst after a restart
// costs one. wait > 0 is the address's answer when it has no token left.
func (s *Server) identify(r *http.Request, key string, digest [sha256.Size]byte, now time.Time) (merchant string, wait time.Duration, err error) {
	if s.knownKeys.has(digest) {
		_, merchant, err = s.keys.Identify(r.Context(), key, now)
		return merchant, 0, err
	}
	addr := ClientKey(r.RemoteAddr)
	v, err, _ := s.lookups.Do(string(digest[:]), func() (any, error) {
		wait, giveBack := s.authFailures.Reserve(r.Context(), addr, now)
		if wait > 0 {
			return identity{wait: wait}, nil
		}
		// The lookup is shared, so no one request's end may cut it short.
		_, m, err := s.keys.Identify(context.WithoutCancel(r.Context()), key, now)
		if err != nil || m != "" {
			giveBack() // not a failed authentication
		}
		return identity{merchant: m}, err
	})
	if err != nil {
		return "", 0, err
	}
	i := v.(identity)
	return i.merchant, i.wait, nil
}

// identity is the shared answer of a lookup in identify.
type identity struct {
	merchant string
	wait     time.Duration
}

func writeRateLimited(w http.ResponseWriter, wait time.Duration, message string) {
	body := errorBody{Error: errorObject{Code: codeRateLimited, Status: http.StatusTooManyRequests, Message: message}}
	body.Error.RetryAfter = retryAfterSeconds(w, wait.Seconds())
	writeJSON(w, http.StatusTooManyRequests, body)
}
