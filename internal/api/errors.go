package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"

	"github.com/momopay/momopay/internal/payment"
)

// Contract error codes (§7) and the ones DESIGN.md §4 adds for limits the
// contract leaves open.
const (
	codeValidation     = "VALIDATION_ERROR"
	codeUnauthorized   = "UNAUTHORIZED"
	codeNotFound       = "NOT_FOUND"
	codeDuplicate      = "DUPLICATE_REFERENCE"
	codeUnavailable    = "GATEWAY_UNAVAILABLE"
	codeRateLimited    = "RATE_LIMITED"
	codeTooLarge       = "PAYLOAD_TOO_LARGE"
	codeMethodNotAllow = "METHOD_NOT_ALLOWED"
	codeNotImplemented = "NOT_IMPLEMENTED"
	codeInternal       = "INTERNAL_ERROR"
)

// domainErrors is the one table from domain error codes to the contract's
// code and HTTP status.
var domainErrors = map[string]struct {
	code   string
	status int
}{
	payment.EINVALID:       {codeValidation, http.StatusBadRequest},
	payment.EUNPROCESSABLE: {codeValidation, http.StatusUnprocessableEntity},
	payment.EUNAUTHORIZED:  {codeUnauthorized, http.StatusUnauthorized},
	payment.ENOTFOUND:      {codeNotFound, http.StatusNotFound},
	payment.EDUPLICATE:     {codeDuplicate, http.StatusConflict},
	payment.EUNAVAILABLE:   {codeUnavailable, http.StatusServiceUnavailable},
	payment.EINTERNAL:      {codeInternal, http.StatusInternalServerError},
}

// errorBody is the contract's envelope: {"error": {...}}.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code                  string            `json:"code"`
	Message               string            `json:"message"`
	Status                int               `json:"status"`
	Fields                map[string]string `json:"fields,omitempty"`
	ExistingTransactionID string            `json:"existing_transaction_id,omitempty"`
	RetryAfter            *int              `json:"retry_after,omitempty"`
}

// writeError answers err in the envelope. Anything that is not a
// *payment.Error is logged with the request id and shown only as
// INTERNAL_ERROR: SQL and Go internals never reach a caller.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if ClientGone(r, err) {
		// Nobody reads the answer, and nothing failed on our side: not a
		// 500 in the logs and metrics. What was committed stays (a create
		// is answered as a duplicate when the client retries it).
		log.Info("request abandoned by the client", "request_id", requestID(r.Context()), "method", r.Method, "path", r.URL.Path)
		writeProblem(w, StatusClientClosedRequest, "CLIENT_CLOSED_REQUEST", "the client closed the request before it was answered")
		return
	}
	e, ok := errors.AsType[*payment.Error](err)
	if !ok && DatabaseOut(r, err) {
		e, ok = databaseUnavailable(r, log, err), true
	}
	if !ok || e.Code == payment.EINTERNAL {
		log.Error("internal error", "request_id", requestID(r.Context()), "method", r.Method, "path", r.URL.Path, "err", err)
		e = &payment.Error{Code: payment.EINTERNAL, Message: "an internal error occurred; quote the X-Request-Id header when reporting it"}
	}
	if (e.Code == payment.EINVALID || e.Code == payment.EUNPROCESSABLE) && len(e.Fields) == 0 {
		// The contract gives every validation error its fields; when no
		// parameter was named, the request body is what is at fault.
		e = &payment.Error{Code: e.Code, Message: e.Message, Fields: map[string]string{"body": e.Message}}
	}
	m := domainErrors[e.Code]
	obj := errorObject{Code: m.code, Message: e.Message, Status: m.status, Fields: e.Fields, ExistingTransactionID: e.ExistingTransactionID}
	if e.RetryAfter > 0 {
		obj.RetryAfter = retryAfterSeconds(w, e.RetryAfter.Seconds())
	}
	writeJSON(w, m.status, errorBody{Error: obj})
}

// StatusClientClosedRequest is what the logs and metrics record for a
// request its client abandoned (nginx's 499); the client never sees it.
const StatusClientClosedRequest = 499

// ClientGone tells whether err comes from the client closing the request
// (its context cancelled, not our time budget spent).
func ClientGone(r *http.Request, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(r.Context().Err(), context.Canceled) &&
		!errors.Is(context.Cause(r.Context()), ErrStopping)
}

// writeProblem answers an HTTP-level problem (limits, routing) that has no
// domain error code.
func writeProblem(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: errorObject{Code: code, Message: message, Status: status}})
}

// retryAfterSeconds rounds up to whole seconds and mirrors the value in the
// standard Retry-After header.
func retryAfterSeconds(w http.ResponseWriter, seconds float64) *int {
	s := int(math.Ceil(seconds))
	w.Header().Set("Retry-After", itoa(s))
	return &s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := encodeJSON(v) // every value written is JSON by construction
	writeJSONBytes(w, status, body)
}

// encodeJSON is v as json.Encoder writes it: its JSON and a newline.
// <, > and & are written as they are, not as \u003c…: the answers are
// JSON served with nosniff, never HTML, and a message such as "send
// Authorization: Bearer <API_KEY>" must read as written in curl.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}

// writeJSONBytes writes an answer encoded already (encodeJSON).
func writeJSONBytes(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}
