package payment

import (
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/momopay/momopay/internal/operator"
)

// Limits of the contract (§8) and of DESIGN.md §4.
const (
	MinAmount = 100
	// MaxAmount is far above what an operator's wallet takes in one payment
	// and far below 2^53-1, so JavaScript clients round-trip every amount.
	MaxAmount            = 10_000_000
	MaxDescriptionLength = 255
	MaxReferenceLength   = 64
)

var (
	referencePattern    = regexp.MustCompile(`^[A-Za-z0-9._:/-]+$`)
	phonePattern        = regexp.MustCompile(`^\+235[0-9]{8}$`)
	operatorCodePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,31}$`)
)

// ValidReference and ValidInternalRef report whether a value has the form
// of a merchant's reference or of an internal_ref. A lookup by anything
// else finds nothing, and is answered so without a query: PostgreSQL
// refuses text with a NUL or invalid UTF-8, which would otherwise be an
// internal error on one engine and "not found" on the other.
func ValidReference(ref string) bool {
	return len(ref) <= 4*MaxReferenceLength && utf8.RuneCountInString(ref) <= MaxReferenceLength && referencePattern.MatchString(ref)
}

// ValidInternalRef: see ValidReference. The form is the operators' (they
// are told it), so its rule is theirs.
func ValidInternalRef(ref string) bool { return operator.ValidRef(ref) }

// CreateRequest is a merchant's request to initiate a payment. The api
// package fills it from JSON and records in Problems the fields it could not
// even read (missing, wrong JSON type, decimal amount), so that Validate can
// report every bad field at once.
type CreateRequest struct {
	Reference   string
	Amount      int64
	Currency    string
	Operator    string
	PhoneNumber string
	Description *string

	// Problems holds form errors found while decoding, by field name.
	Problems map[string]string
}

// Validate applies the contract's rules and DESIGN.md's 400/422 split: form
// problems (EINVALID) win over value problems (EUNPROCESSABLE), and either
// way every bad field is named.
func (r *CreateRequest) Validate() error {
	form := map[string]string{}
	for k, v := range r.Problems {
		form[k] = v
	}
	value := map[string]string{}
	check := func(field string, bad bool, msg string, into map[string]string) {
		if _, seen := form[field]; seen || !bad {
			return
		}
		into[field] = msg
	}

	// Text first: a control character or broken UTF-8 deserves its own
	// message rather than the pattern's, and PostgreSQL cannot store NUL.
	check("reference", !IsText(r.Reference), textProblem, form)
	check("currency", !IsText(r.Currency), textProblem, form)
	check("operator", !IsText(r.Operator), textProblem, form)
	check("phone_number", !IsText(r.PhoneNumber), textProblem, form)
	if r.Description != nil {
		check("description", !IsText(*r.Description), textProblem, form)
	}

	check("reference", r.Reference == "", "must not be empty", form)
	check("reference", utf8.RuneCountInString(r.Reference) > MaxReferenceLength, "must be at most 64 characters", form)
	check("reference", !referencePattern.MatchString(r.Reference), "may contain only letters, digits and . _ : / -", form)
	check("currency", r.Currency != Currency, "must be XAF", form)
	check("phone_number", !phonePattern.MatchString(r.PhoneNumber), "must be +235 followed by 8 digits", form)
	check("operator", !operatorCodePattern.MatchString(r.Operator), "must be an upper-case operator code: AIRTEL or MOOV", form)
	check("operator", !Operator(r.Operator).Valid(), "unsupported operator: use AIRTEL or MOOV", value)
	if r.Description != nil {
		check("description", utf8.RuneCountInString(*r.Description) > MaxDescriptionLength, "must be at most 255 characters", form)
	}
	check("amount", r.Amount < MinAmount, "must be at least 100 XAF", value)
	check("amount", r.Amount > MaxAmount, "is too large: at most 10000000 XAF", value)

	switch {
	case len(form) > 0:
		for k, v := range value {
			form[k] = v
		}
		return &Error{Code: EINVALID, Message: "the request has invalid parameters", Fields: form}
	case len(value) > 0:
		return &Error{Code: EUNPROCESSABLE, Message: "the request has unacceptable values", Fields: value}
	}
	return nil
}

// textProblem is the message for a string that is not plain text.
const textProblem = "must be valid UTF-8 text without control characters"

// IsText reports whether s is valid UTF-8 free of control characters
// (C0, DEL, C1: NUL, newline and tab included). Every text the API takes is
// one line shown to a payer or a merchant, and PostgreSQL refuses NUL and
// bytes that are not UTF-8; the other packages' one-line fields (webhook
// URLs, who asked for a refund) are held to it too.
func IsText(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// idPattern is the one form of a transaction id: a lower-case UUID with
// dashes, as the service writes them.
var idPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ValidID reports whether id has the canonical form of the ids the service
// assigns. Other spellings of a UUID (upper case, braces, urn:uuid:, no
// dashes) are not ids: PostgreSQL's uuid type would accept them and SQLite's
// text would not, so they are refused before any query to answer alike on
// both engines.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Bounds of list filters' from and to: any instant in this range is a real
// bound, so a given bound is never mistaken for the zero time that means
// "none", and every bound has a four-digit year in every engine's format.
var (
	MinFilterTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxFilterTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// Validate checks list filters whose values the api could parse.
func (f *ListFilter) Validate() error {
	fields := map[string]string{}
	if f.Page < 1 {
		fields["page"] = "must be an integer of at least 1"
	}
	if f.PerPage < 1 || f.PerPage > 100 {
		fields["per_page"] = "must be an integer from 1 to 100"
	}
	if f.Status != "" && !f.Status.Valid() {
		fields["status"] = "must be one of PENDING, SUCCESS, FAILED, TIMEOUT, EXPIRED"
	}
	if f.Operator != "" && !f.Operator.Valid() {
		fields["operator"] = "must be AIRTEL or MOOV"
	}
	// The range is checked at the microsecond the bound is compared at, so
	// to=9999-12-31T23:59:59.9999999Z, within that day, is not refused.
	outside := func(t time.Time, end bool) bool {
		r := MicrosecondBound(t, end)
		return r.Before(MinFilterTime) || r.After(MaxFilterTime)
	}
	if !f.From.IsZero() && outside(f.From, false) {
		fields["from"] = "must be between 1970-01-01 and 9999-12-31"
	}
	if !f.To.IsZero() && outside(f.To, true) {
		fields["to"] = "must be between 1970-01-01 and 9999-12-31"
	}
	if _, bad := fields["to"]; !bad && !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		fields["to"] = "must not be before from"
	}
	if len(fields) > 0 {
		return &Error{Code: EINVALID, Message: "invalid list filter", Fields: fields}
	}
	return nil
}
