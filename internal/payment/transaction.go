package payment

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Status is the lifecycle state of a transaction (contract §3).
type Status string

// The five states of the contract. Every state but PENDING is final.
const (
	StatusPending Status = "PENDING"
	StatusSuccess Status = "SUCCESS"
	StatusFailed  Status = "FAILED"
	StatusTimeout Status = "TIMEOUT"
	StatusExpired Status = "EXPIRED"
)

// Valid reports whether s is one of the contract's five states.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusSuccess, StatusFailed, StatusTimeout, StatusExpired:
		return true
	}
	return false
}

// Final reports whether s can never change again (contract §3 rule 1).
func (s Status) Final() bool { return s.Valid() && s != StatusPending }

// Event names the webhook sent when a transaction reaches s, or "" when none
// is sent (PENDING, and EXPIRED by contract §6.1).
func (s Status) Event() string {
	switch s {
	case StatusSuccess:
		return "transaction.success"
	case StatusFailed:
		return "transaction.failed"
	case StatusTimeout:
		return "transaction.timeout"
	}
	return ""
}

// Operator is a Mobile Money operator code.
type Operator string

// The operators momopay collects through.
const (
	OperatorAirtel Operator = "AIRTEL"
	OperatorMoov   Operator = "MOOV"
)

// Operators lists the supported operators, for validation and wiring.
var Operators = []Operator{OperatorAirtel, OperatorMoov}

// Valid reports whether o is a supported operator.
func (o Operator) Valid() bool { return o == OperatorAirtel || o == OperatorMoov }

// Currency is the only currency the contract allows.
const Currency = "XAF"

// DefaultPendingTTL is how long a transaction may stay PENDING (contract §8).
const DefaultPendingTTL = 5 * time.Minute

// TimeFormat is the one wire format of every timestamp, in the API and in
// webhooks alike: RFC 3339 in UTC with exactly six fractional digits. Fixed
// width keeps text order equal to time order, and microseconds are what the
// databases store, so a created_at copied into a list filter matches exactly.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// FormatTime writes t in TimeFormat; finer digits than microseconds are
// cut, never rounded, as the databases do.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Transaction is one payment request of one merchant (contract §2.1).
// Amount is whole XAF: the currency has no minor unit and floats never hold money.
type Transaction struct {
	ID          string
	MerchantID  string
	Reference   string
	InternalRef string
	Amount      int64
	Currency    string
	Operator    Operator
	PhoneNumber string
	Description *string
	Status      Status
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExpiresAt   time.Time
	// PushInFlight is true from the insert until the operator took the push
	// (or answered ambiguously); a refused push deletes the transaction.
	// Never shown to merchants.
	PushInFlight bool
	// OperatorRef is the operator's own id of the payment (Airtel's
	// airtel_money_id), OperatorCode its last final code and FailureReason
	// our word for why a FAILED payment failed (operator.FailureReason).
	// They are for the service's operators (CLI, dashboard), never in the
	// /v1 objects or webhooks, which the contract fixes; "" when unknown.
	OperatorRef   string
	OperatorCode  string
	FailureReason string
}

// ListFilter selects a page of a merchant's transactions (contract §4.3).
// Zero values mean "no filter"; From and To bound created_at inclusively.
type ListFilter struct {
	Page     int
	PerPage  int
	Status   Status
	Operator Operator
	From     time.Time
	To       time.Time
}

// MicrosecondBound is a list bound t at the precision times are kept in,
// the microsecond: an inclusive from between two microseconds starts at
// the next one, a to (end) at the one before. Cut either way,
// from=…31.7560201Z would list a payment made at …31.756020Z.
func MicrosecondBound(t time.Time, end bool) time.Time {
	micro := t.Truncate(time.Microsecond)
	if !end && !micro.Equal(t) {
		return micro.Add(time.Microsecond)
	}
	return micro
}

// Microseconds is f with its bounds rounded by MicrosecondBound, and
// false when nothing can match them: from and to within one microsecond
// but on either side of every time kept, which is an empty list, not a
// mistake of the caller's.
func (f ListFilter) Microseconds() (ListFilter, bool) {
	if !f.From.IsZero() {
		f.From = MicrosecondBound(f.From, false)
	}
	if !f.To.IsZero() {
		f.To = MicrosecondBound(f.To, true)
	}
	return f, f.From.IsZero() || f.To.IsZero() || !f.To.Before(f.From)
}

// Page is one page of a list with the true number of matches.
type Page struct {
	Transactions []Transaction
	Total        int
}

// ReconciliationCase records an operator outcome that arrived after the
// transaction was already final, so money taken after a TIMEOUT is never
// silently lost (DESIGN.md §4 "late outcome").
type ReconciliationCase struct {
	ID             string    `json:"id"`
	MerchantID     string    `json:"merchant_id"`
	TransactionID  string    `json:"transaction_id"`
	FinalStatus    Status    `json:"final_status"`
	ReportedStatus Status    `json:"reported_status"`
	Source         string    `json:"source"`
	Detail         string    `json:"detail"`
	CreatedAt      time.Time `json:"created_at"`
	// ResolvedAt is nil while the case is open. ResolvedBy names who
	// closed it (a dashboard user's email) and ResolutionNote what they
	// did about it.
	ResolvedAt     *time.Time `json:"resolved_at"`
	ResolvedBy     string     `json:"resolved_by,omitempty"`
	ResolutionNote string     `json:"resolution_note,omitempty"`
}

// MaxResolutionNote bounds the note that closes a reconciliation case.
const MaxResolutionNote = 1000

// ErrCaseResolved is the Reason of the refusal to resolve a case that was
// resolved already: two people working the same case must not overwrite
// each other's note.
var ErrCaseResolved = errors.New("the case was resolved already")

// ValidateResolution checks the note that closes a reconciliation case: it
// says what was done about the money (refunded, credited, confirmed with the
// operator), so it is required, printable and bounded.
func ValidateResolution(note string) error {
	msg := ""
	switch {
	case strings.TrimSpace(note) == "":
		msg = "say what was done about this case"
	case utf8.RuneCountInString(note) > MaxResolutionNote:
		msg = fmt.Sprintf("at most %d characters", MaxResolutionNote)
	case !printable(note):
		msg = "must be valid text without control characters"
	}
	if msg == "" {
		return nil
	}
	return &Error{Code: EINVALID, Message: "the note is invalid", Fields: map[string]string{"note": msg}}
}

// printable reports whether s is valid UTF-8 with no control characters
// other than line breaks and tabs, which a note may hold.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}
