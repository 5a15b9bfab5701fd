package payment

import (
	"time"
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
}
