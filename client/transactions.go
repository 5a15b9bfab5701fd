package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Status is where a transaction stands in its lifecycle (docs/api.md, States).
type Status string

// Transaction statuses. Only PENDING changes; the others are final.
const (
	// StatusPending: the payer has been asked and has not answered yet.
	StatusPending Status = "PENDING"
	// StatusSuccess: the payer confirmed and the money was collected.
	StatusSuccess Status = "SUCCESS"
	// StatusFailed: the payment was refused (balance, cancellation, operator).
	StatusFailed Status = "FAILED"
	// StatusTimeout: the payer did not answer within 5 minutes.
	StatusTimeout Status = "TIMEOUT"
	// StatusExpired: the operator expired the request; no webhook is sent,
	// so poll transactions still PENDING after ExpiresAt to see it.
	StatusExpired Status = "EXPIRED"
)

// Final reports whether s can no longer change, i.e. whether the order can
// be settled on it.
func (s Status) Final() bool { return s != StatusPending && s != "" }

// Operator is the Mobile Money network that collects the payment.
type Operator string

// Supported operators.
const (
	OperatorAirtel Operator = "AIRTEL"
	OperatorMoov   Operator = "MOOV"
)

// CurrencyXAF is the only currency the service accepts; CreateTransaction
// fills it in when CreateTransactionParams.Currency is empty.
const CurrencyXAF = "XAF"

// Transaction is one payment request and its outcome.
type Transaction struct {
	ID          string   `json:"id"`
	Reference   string   `json:"reference"`    // the merchant's order reference; unique per merchant
	InternalRef string   `json:"internal_ref"` // "SERVICE-XXXXXXXX", quoted to the provider's support
	Amount      int64    `json:"amount"`       // whole XAF; never a float
	Currency    string   `json:"currency"`
	Operator    Operator `json:"operator"`
	PhoneNumber string   `json:"phone_number"`
	// Description is nil when none was given. It is also nil in list
	// results, which do not carry it.
	Description *string   `json:"description"`
	Status      Status    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// ExpiresAt is when a PENDING transaction runs out (5 minutes after
	// creation). It is zero in list results; use GetTransaction to read it.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// CreateTransactionParams describes a payment to request from a payer.
type CreateTransactionParams struct {
	// Reference is the merchant's unique order reference and the
	// idempotency key: sending it again never creates a second payment.
	Reference   string   `json:"reference"`
	Amount      int64    `json:"amount"`   // whole XAF, at least 100
	Currency    string   `json:"currency"` // empty means CurrencyXAF
	Operator    Operator `json:"operator"`
	PhoneNumber string   `json:"phone_number"` // "+235" and 8 digits
	// Description is shown to the payer; at most 255 characters. "" sends
	// none, and the transaction's description is then null (the API keeps
	// an empty string sent as "", which this client does not send).
	Description string `json:"description,omitempty"`
}

// ListParams filters and pages ListTransactions. Zero values mean "not set",
// leaving the service defaults (page 1, 20 per page, no filter); a negative
// page or per_page is sent as it is, and the API refuses it.
type ListParams struct {
	Page     int
	PerPage  int // at most 100
	Status   Status
	Operator Operator
	From     time.Time // created at or after, inclusive
	// To is created at or before, inclusive, to the microsecond: the
	// instant is sent as given, so To at midnight of a day excludes that
	// day. To cover a whole day, end at its last microsecond:
	// From: day, To: day.AddDate(0, 0, 1).Add(-time.Microsecond).
	To time.Time
}

// Pagination describes where a page sits in the whole result.
type Pagination struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Total      int `json:"total"`
	TotalPages int `json:"total_pages"`
}

// TransactionList is one page of transactions, newest first.
type TransactionList struct {
	Data       []Transaction `json:"data"`
	Pagination Pagination    `json:"pagination"`
}

// CreateTransaction asks the payer to pay and returns the PENDING
// transaction. The outcome arrives later by webhook (or GetTransaction).
//
// It is safe to repeat: if an attempt's answer is lost (a network error,
// a proxy's 502 or 504) and the automatic retry meets 409
// DUPLICATE_REFERENCE, the transaction the lost attempt created is fetched
// and returned, provided its amount, currency, operator and phone number
// match p. A 409 on the first attempt, or after attempts the service
// refused before acting on them (429, 503 GATEWAY_UNAVAILABLE), is returned
// as an *Error: the reference was used before, not by this call. If you
// retry a call yourself after an error, the same 409 tells you that your
// earlier call went through; ExistingTransactionID names it.
func (c *Client) CreateTransaction(ctx context.Context, p CreateTransactionParams) (*Transaction, error) {
	if p.Currency == "" {
		p.Currency = CurrencyXAF
	}
	for field, v := range map[string]string{"reference": p.Reference, "phone_number": p.PhoneNumber, "description": p.Description,
		"currency": string(p.Currency), "operator": string(p.Operator)} {
		if !utf8.ValidString(v) {
			// encoding/json would send U+FFFD in its place: the payment
			// would be made with text the caller did not write.
			e := invalidRequest("creating a transaction", fmt.Errorf("%s is not valid UTF-8", field))
			e.Fields = map[string]string{field: "must be valid UTF-8 text"}
			return nil, e
		}
	}
	var t Transaction
	unsure, err := c.call(ctx, http.MethodPost, "/v1/transactions", nil, p, &t)
	if err == nil {
		return &t, nil
	}
	var dup *Error
	if !unsure || !errors.As(err, &dup) || dup.Code != CodeDuplicateReference || dup.ExistingTransactionID == "" {
		return nil, err
	}
	existing, gerr := c.GetTransaction(ctx, dup.ExistingTransactionID)
	if gerr != nil {
		return nil, gerr
	}
	if !sameRequest(existing, p) {
		// The reference belongs to an older, different payment: our lost
		// attempt did not create it, so the conflict is the caller's.
		return nil, err
	}
	return existing, nil
}

// sameRequest reports whether t is what p would have created, so a 409 met
// on a retry is only resolved when it is our own earlier attempt.
func sameRequest(t *Transaction, p CreateTransactionParams) bool {
	return t.Reference == p.Reference && t.Amount == p.Amount && t.Currency == p.Currency &&
		t.Operator == p.Operator && t.PhoneNumber == p.PhoneNumber
}

// GetTransaction reads one transaction with all its fields. It returns
// ErrNotFound for an unknown id and for another merchant's transaction.
func (c *Client) GetTransaction(ctx context.Context, id string) (*Transaction, error) {
	if id == "" {
		return nil, invalidRequest("reading a transaction", errors.New("the transaction id is empty"))
	}
	// PathEscape leaves dots as they are, and a proxy that cleans paths
	// turns /v1/transactions/.. into the list: escaped, "." and ".." stay
	// ids (unknown ones).
	var t Transaction
	if _, err := c.call(ctx, http.MethodGet, "/v1/transactions/"+strings.ReplaceAll(url.PathEscape(id), ".", "%2E"), nil, nil, &t); err != nil {
		return nil, err
	}
	if t.ID == "" {
		// Something else answered 200 (a proxy's page, the list): not a
		// transaction, whatever it decoded into.
		return nil, &Error{Code: CodeUnexpectedResponse, Message: "the answer to a transaction read has no id"}
	}
	return &t, nil
}

// ListTransactions returns one page of the merchant's transactions, newest
// first. To walk every page, use AllTransactions.
func (c *Client) ListTransactions(ctx context.Context, p ListParams) (*TransactionList, error) {
	var l TransactionList
	if _, err := c.call(ctx, http.MethodGet, "/v1/transactions", p.query(), nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// AllTransactions iterates over every transaction matching p, newest first,
// fetching pages as the loop needs them. The first request is page p.Page (or
// 1); on an error it yields the error once and stops.
//
// The walk does not count pages by offset, which shifts whenever a
// transaction enters or leaves the filter (a PENDING one settling, a new one
// created) and would skip or repeat items. After each page it asks for page 1
// again, ending at the oldest item yielded so far (To is inclusive, so the
// items of that same instant come back and are skipped). Only when a whole
// page shares one created_at, and so ending there would return the same page,
// does it step by page number within that instant. Transactions created, or
// entering the filter, behind the walk's position are not seen; p.To and
// p.From keep bounding every request.
func (c *Client) AllTransactions(ctx context.Context, p ListParams) iter.Seq2[Transaction, error] {
	return func(yield func(Transaction, error) bool) {
		q := p
		q.Page = max(p.Page, 1)
		var last *Transaction // the oldest item yielded: the walk's position
		for {
			l, err := c.ListTransactions(ctx, q)
			if err != nil {
				yield(Transaction{}, err)
				return
			}
			for _, t := range l.Data {
				if last != nil && !listedAfter(t, *last) {
					continue // yielded already, or behind the walk's position
				}
				if !yield(t, nil) {
					return
				}
				last = &t
			}
			if len(l.Data) == 0 || q.Page >= l.Pagination.TotalPages {
				return
			}
			q = nextPage(q, l.Data[len(l.Data)-1].CreatedAt)
		}
	}
}

// nextPage is the request after page q, whose oldest item was created at
// oldest: page 1 ending at that instant, unless q already ended there (the
// whole page shares that created_at), when it is the next page of the
// instant.
func nextPage(q ListParams, oldest time.Time) ListParams {
	if !q.To.IsZero() && q.To.Equal(oldest) {
		q.Page++
		return q
	}
	q.To, q.Page = oldest, 1
	return q
}

// listedAfter reports whether t comes after u in the list's order: by
// created_at, then by id, both descending (docs/api.md). Ids are lower-case
// UUIDs, which the service orders as their text does.
func listedAfter(t, u Transaction) bool {
	if !t.CreatedAt.Equal(u.CreatedAt) {
		return t.CreatedAt.Before(u.CreatedAt)
	}
	return t.ID < u.ID
}

// query encodes the set fields; times go out as RFC 3339 in UTC.
func (p ListParams) query() url.Values {
	q := url.Values{}
	// 0 is "the default"; anything else goes out as it is, so a negative
	// value gets the API's 400 rather than silently the first page.
	if p.Page != 0 {
		q.Set("page", strconv.Itoa(p.Page))
	}
	if p.PerPage != 0 {
		q.Set("per_page", strconv.Itoa(p.PerPage))
	}
	if p.Status != "" {
		q.Set("status", string(p.Status))
	}
	if p.Operator != "" {
		q.Set("operator", string(p.Operator))
	}
	if !p.From.IsZero() {
		q.Set("from", p.From.UTC().Format(time.RFC3339Nano))
	}
	if !p.To.IsZero() {
		q.Set("to", p.To.UTC().Format(time.RFC3339Nano))
	}
	return q
}
