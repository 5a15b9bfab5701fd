package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Error codes carried by *Error. The API returns the first group in its error
// envelope (docs/api.md, Errors); the client itself produces CodeNetwork,
// CodeUnexpectedResponse and CodeInvalidRequest, so every failure can be
// handled with one switch.
const (
	// CodeValidation means the request was refused for its content: a
	// malformed field (HTTP 400) or a well-formed but disallowed value (422).
	// Error.Fields names each offending parameter.
	CodeValidation = "VALIDATION_ERROR"
	// CodeUnauthorized means the API key is missing, invalid or revoked.
	CodeUnauthorized = "UNAUTHORIZED"
	// CodeNotFound means the transaction does not exist or belongs to
	// another merchant; the API deliberately does not say which.
	CodeNotFound = "NOT_FOUND"
	// CodeDuplicateReference means the reference is already used by this
	// merchant; Error.ExistingTransactionID names the transaction holding it.
	CodeDuplicateReference = "DUPLICATE_REFERENCE"
	// CodeGatewayUnavailable means the operator cannot take payments right
	// now; nothing was kept, so the same reference can be retried later.
	CodeGatewayUnavailable = "GATEWAY_UNAVAILABLE"
	// CodeRateLimited means the API key sent too many requests.
	CodeRateLimited = "RATE_LIMITED"
	// CodePayloadTooLarge means the request body exceeded the service limit.
	CodePayloadTooLarge = "PAYLOAD_TOO_LARGE"
	// CodeInternal means the service failed; the request id identifies the
	// failure in the service's logs.
	CodeInternal = "INTERNAL_ERROR"
	// CodeMethodNotAllowed, CodeHeadersTooLarge and CodeNotImplemented
	// answer HTTP requests the client never makes itself (a method a path
	// does not take, headers over about 20 KiB, a Transfer-Encoding other
	// than chunked); they are named so that a switch can cover every code
	// the API sends.
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeHeadersTooLarge  = "REQUEST_HEADER_FIELDS_TOO_LARGE"
	CodeNotImplemented   = "NOT_IMPLEMENTED"

	// CodeNetwork means the API could not be reached or its answer was cut
	// off (connection refused, DNS failure, timeout). It is local to the
	// client, not an API answer, and the underlying cause is available via Unwrap.
	CodeNetwork = "NETWORK_ERROR"
	// CodeUnexpectedResponse means something answered that is not the
	// momopay API envelope, such as a proxy's HTML error page or a wrong
	// base URL. Error.Status holds the HTTP status that was received.
	CodeUnexpectedResponse = "UNEXPECTED_RESPONSE"
	// CodeInvalidRequest means the client could not build the request, so
	// nothing was sent: usually a malformed base URL (see WithBaseURL). It
	// is never retried, as building it again fails the same way; the
	// cause is available via Unwrap.
	CodeInvalidRequest = "INVALID_REQUEST"
)

// Sentinels for errors.Is. They match any *Error with the same Code, so
// callers can branch on the kind of failure without a type assertion:
//
//	if errors.Is(err, client.ErrNotFound) { ... }
var (
	ErrValidation         = &Error{Code: CodeValidation}
	ErrUnauthorized       = &Error{Code: CodeUnauthorized}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrDuplicateReference = &Error{Code: CodeDuplicateReference}
	ErrGatewayUnavailable = &Error{Code: CodeGatewayUnavailable}
	ErrRateLimited        = &Error{Code: CodeRateLimited}
	ErrPayloadTooLarge    = &Error{Code: CodePayloadTooLarge}
	ErrInternal           = &Error{Code: CodeInternal}
	ErrNetwork            = &Error{Code: CodeNetwork}
	ErrUnexpectedResponse = &Error{Code: CodeUnexpectedResponse}
	ErrInvalidRequest     = &Error{Code: CodeInvalidRequest}
)

// Error is the only error type the API methods return, so one errors.As
// gives a caller everything the service said about a failure.
type Error struct {
	// Code is one of the Code constants; new codes may appear, so treat
	// unknown ones like CodeInternal.
	Code string
	// Message is human-readable text for logs; do not parse it.
	Message string
	// Status is the HTTP status, or 0 when no answer was received.
	Status int
	// Fields maps each invalid parameter to a message (validation errors).
	Fields map[string]string
	// ExistingTransactionID names the transaction that already holds the
	// reference (DUPLICATE_REFERENCE).
	ExistingTransactionID string
	// RetryAfter is how long the service asks callers to wait before trying
	// again (GATEWAY_UNAVAILABLE, RATE_LIMITED); 0 when not given.
	RetryAfter time.Duration
	// RequestID is the X-Request-Id of the failed response; quote it when
	// asking the provider about a failure.
	RequestID string

	cause error
}

// Error formats the code, status and message with the request id, which is
// what a support ticket needs.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("momopay: ")
	b.WriteString(e.Code)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	// Which fields, in a stable order: a log line must say what to fix.
	if len(e.Fields) > 0 {
		var fields []string
		for _, name := range slices.Sorted(maps.Keys(e.Fields)) {
			fields = append(fields, name+": "+e.Fields[name])
		}
		b.WriteString(" (" + strings.Join(fields, "; ") + ")")
	}
	if e.RequestID != "" {
		b.WriteString(" [request_id=")
		b.WriteString(e.RequestID)
		b.WriteString("]")
	}
	return b.String()
}

// Unwrap exposes the transport failure behind a NETWORK_ERROR (or the decode
// failure behind UNEXPECTED_RESPONSE, the build failure behind
// INVALID_REQUEST), so errors.Is(err, context.DeadlineExceeded) and
// errors.As(err, **net.OpError) keep working. When the context ended while
// the client waited to retry, it also gives the context's error, so
// errors.Is(err, context.Canceled) holds while Code still tells what the
// last attempt met.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same Code, which is what
// makes the Err sentinels work with errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// envelope is the wire form of every API error (docs/api.md, Errors).
type envelope struct {
	Error *struct {
		Code                  string            `json:"code"`
		Message               string            `json:"message"`
		Status                int               `json:"status"`
		Fields                map[string]string `json:"fields"`
		ExistingTransactionID string            `json:"existing_transaction_id"`
		RetryAfter            *int64            `json:"retry_after"`
	} `json:"error"`
}

// errorFromResponse turns a non-2xx answer into *Error. Bodies that are not
// the API envelope still yield an *Error carrying the HTTP status, so callers
// never have to handle a second error shape.
func errorFromResponse(resp *http.Response, body []byte) *Error {
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	e.RetryAfter = parseRetryAfterHeader(resp.Header.Get("Retry-After"))
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil || env.Error.Code == "" {
		e.Code = CodeUnexpectedResponse
		e.Message = fmt.Sprintf("answer %q is not a momopay error: %q", resp.Status, snippet(body))
		return e
	}
	w := env.Error
	e.Code, e.Message, e.Fields = w.Code, w.Message, w.Fields
	e.ExistingTransactionID = w.ExistingTransactionID
	if w.RetryAfter != nil && *w.RetryAfter > 0 {
		e.RetryAfter = time.Duration(*w.RetryAfter) * time.Second
	}
	return e
}

// networkError wraps a transport failure so callers see one error type.
func networkError(err error) *Error {
	return &Error{Code: CodeNetwork, Message: "cannot reach the momopay API: " + err.Error(), cause: err}
}

// invalidRequest reports a request the client could not build; nothing was
// sent.
func invalidRequest(what string, err error) *Error {
	return &Error{Code: CodeInvalidRequest, Message: what + ": " + err.Error(), cause: err}
}

// interrupted is the last attempt's failure once ctx has ended before the
// next attempt: its Code and details stay (they say what went wrong), and
// it also matches ctx's error, which is why the call stopped. A failure
// that already wraps it (a request cut off by the cancellation) is kept.
func interrupted(err error, ctxErr error) error {
	e, ok := err.(*Error)
	if !ok || errors.Is(err, ctxErr) {
		return err
	}
	c := *e
	c.Message += " (gave up before retrying: " + ctxErr.Error() + ")"
	c.cause = errors.Join(e.cause, ctxErr)
	return &c
}

// parseRetryAfterHeader reads the delay-seconds form of Retry-After, which
// proxies and load balancers may send when the body is not ours.
func parseRetryAfterHeader(v string) time.Duration {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// snippet keeps error messages short when a proxy returns a whole HTML page.
func snippet(b []byte) string {
	const max = 200
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
