package payment

import (
	"errors"
	"fmt"
	"time"
)

// Error codes of the domain. The api package maps each to the contract's
// error code and HTTP status in one table; the domain never speaks HTTP.
const (
	EINVALID       = "invalid"       // wrong form: 400 VALIDATION_ERROR
	EUNPROCESSABLE = "unprocessable" // well-formed, not allowed: 422 VALIDATION_ERROR
	EUNAUTHORIZED  = "unauthorized"  // 401 UNAUTHORIZED
	ENOTFOUND      = "not_found"     // 404 NOT_FOUND
	EDUPLICATE     = "duplicate"     // 409 DUPLICATE_REFERENCE
	EUNAVAILABLE   = "unavailable"   // 503 GATEWAY_UNAVAILABLE
	EINTERNAL      = "internal"      // 500 INTERNAL_ERROR
)

// Error is the one error type momopay returns to callers. Message is safe to
// show a merchant; anything else is wrapped as EINTERNAL and never shown.
type Error struct {
	Code    string
	Message string
	// Fields maps each bad input field to what is wrong with it.
	Fields map[string]string
	// ExistingTransactionID is set with EDUPLICATE.
	ExistingTransactionID string
	// RetryAfter is set with EUNAVAILABLE.
	RetryAfter time.Duration
	// Reason, when set, is the specific refusal behind Message (one of a
	// package's sentinel errors), for callers that must tell refusals
	// apart with errors.Is: the dashboard words each in the user's
	// language. It is never shown.
	Reason error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Unwrap gives errors.Is and errors.As the Reason.
func (e *Error) Unwrap() error { return e.Reason }

// DuplicateReference is the 409 answer to a create whose reference the
// merchant's transaction id already holds.
func DuplicateReference(id string) *Error {
	return &Error{Code: EDUPLICATE, ExistingTransactionID: id, Message: "a transaction with this reference already exists"}
}

// Errorf builds an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Refuse builds an *Error with a formatted message, carrying reason as its
// Reason.
func Refuse(code string, reason error, format string, args ...any) *Error {
	e := Errorf(code, format, args...)
	e.Reason = reason
	return e
}

// ErrorCode returns the code of err, EINTERNAL for anything that is not an
// *Error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EINTERNAL
}

// ErrNotFound is returned when a transaction does not exist for the merchant.
var ErrNotFound = &Error{Code: ENOTFOUND, Message: "transaction not found"}
