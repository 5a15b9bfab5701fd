package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/payment"
)

// Payments is what the handlers need from payment.Service.
type Payments interface {
	Initiate(ctx context.Context, merchantID string, req payment.CreateRequest) (*payment.Transaction, error)
	Get(ctx context.Context, merchantID, id string) (*payment.Transaction, error)
	List(ctx context.Context, merchantID string, f payment.ListFilter) (*payment.Page, error)
	SettleByRef(ctx context.Context, op payment.Operator, ref string, o operator.Outcome, source string) error
}

// MaxBodyBytes bounds request bodies (DESIGN.md §4).
const MaxBodyBytes = 64 << 10

// transactionJSON is a Transaction on the wire (contract §2.1). List items
// leave out description and expires_at, hence the pointers.
type transactionJSON struct {
	ID          string   `json:"id"`
	Reference   string   `json:"reference"`
	InternalRef string   `json:"internal_ref"`
	Amount      int64    `json:"amount"`
	Currency    string   `json:"currency"`
	Operator    string   `json:"operator"`
	PhoneNumber string   `json:"phone_number"`
	Description **string `json:"description,omitempty"`
	Status      string   `json:"status"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
	ExpiresAt   *string  `json:"expires_at,omitempty"`
}

func toJSON(t *payment.Transaction, full bool) transactionJSON {
	out := transactionJSON{
		ID: t.ID, Reference: t.Reference, InternalRef: t.InternalRef, Amount: t.Amount, Currency: t.Currency,
		Operator: string(t.Operator), PhoneNumber: t.PhoneNumber, Status: string(t.Status),
		CreatedAt: payment.FormatTime(t.CreatedAt), UpdatedAt: payment.FormatTime(t.UpdatedAt),
	}
	if full {
		desc, exp := t.Description, payment.FormatTime(t.ExpiresAt)
		out.Description, out.ExpiresAt = &desc, &exp
	}
	return out
}

func (s *Server) handleCreateTransaction() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decodeCreateRequest(w, r)
		if err != nil {
			s.writeDecodeError(w, r, err)
			return
		}
		t, err := s.payments.Initiate(r.Context(), merchantID(r.Context()), req)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		w.Header().Set("Location", "/v1/transactions/"+t.ID)
		writeJSON(w, http.StatusCreated, toJSON(t, true))
	})
}

func (s *Server) handleGetTransaction() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := s.payments.Get(r.Context(), merchantID(r.Context()), r.PathValue("id"))
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusOK, toJSON(t, true))
	})
}

type pagination struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Total      int `json:"total"`
	TotalPages int `json:"total_pages"`
}

type listJSON struct {
	Data       []transactionJSON `json:"data"`
	Pagination pagination        `json:"pagination"`
}

func (s *Server) handleListTransactions() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := parseListFilter(r.URL.Query())
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		page, err := s.payments.List(r.Context(), merchantID(r.Context()), f)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		out := listJSON{Data: make([]transactionJSON, 0, len(page.Transactions)), Pagination: pagination{
			Page: f.Page, PerPage: f.PerPage, Total: page.Total, TotalPages: (page.Total + f.PerPage - 1) / f.PerPage,
		}}
		for i := range page.Transactions {
			out.Data = append(out.Data, toJSON(&page.Transactions[i], false))
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// Sentinels of decodeCreateRequest for problems that are not about a field.
var (
	errMediaType = errors.New("Content-Type must be application/json")
	errTooLarge  = errors.New("request body exceeds 64 KiB")
)

func (s *Server) writeDecodeError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errMediaType):
		writeProblem(w, http.StatusUnsupportedMediaType, codeMediaType, err.Error())
	case errors.Is(err, errTooLarge):
		writeProblem(w, http.StatusRequestEntityTooLarge, codeTooLarge, err.Error())
	default:
		writeError(w, r, s.log, err)
	}
}

// integerPattern is a JSON number without fraction or exponent: the
// contract's amounts have no decimals, and 1e2 or 100.0 are refused as such.
var integerPattern = regexp.MustCompile(`^-?[0-9]+$`)

// decodeCreateRequest reads the body field by field, so that every field
// with a wrong type, and every unknown or missing field, is named at once.
func decodeCreateRequest(w http.ResponseWriter, r *http.Request) (payment.CreateRequest, error) {
	var req payment.CreateRequest
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return req, errMediaType
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return req, errTooLarge
	}
	if err != nil {
		return req, payment.Errorf(payment.EINVALID, "could not read the request body")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return req, payment.Errorf(payment.EINVALID, "the request body must be a JSON object")
	}

	problems := map[string]string{}
	str := func(name string, into *string) {
		v, ok := raw[name]
		delete(raw, name)
		if !ok || string(v) == "null" {
			problems[name] = "is required"
		} else if json.Unmarshal(v, into) != nil {
			problems[name] = "must be a string"
		}
	}
	str("reference", &req.Reference)
	str("currency", &req.Currency)
	str("operator", &req.Operator)
	str("phone_number", &req.PhoneNumber)

	switch v, ok := raw["amount"]; {
	case !ok || string(v) == "null":
		problems["amount"] = "is required"
	case !integerPattern.Match(v):
		problems["amount"] = "must be a whole number of XAF, without decimals"
	default:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			problems["amount"] = "is too large"
		}
		req.Amount = n
	}
	delete(raw, "amount")

	if v, ok := raw["description"]; ok && string(v) != "null" {
		var d string
		if json.Unmarshal(v, &d) != nil {
			problems["description"] = "must be a string or null"
		} else {
			req.Description = &d
		}
	}
	delete(raw, "description")

	for name := range raw {
		problems[name] = "unknown field"
	}
	req.Problems = problems
	return req, nil
}

// parseListFilter reads the list query (contract §4.3). Unknown parameters
// are refused, so that a filter the API does not have (reference, say) is
// not silently ignored.
func parseListFilter(q url.Values) (payment.ListFilter, error) {
	f := payment.ListFilter{Page: 1, PerPage: 20}
	fields := map[string]string{}
	for name, vals := range q {
		if len(vals) != 1 {
			fields[name] = "must be given once"
			continue
		}
		v := vals[0]
		var err error
		switch name {
		case "page":
			f.Page, err = strconv.Atoi(v)
		case "per_page":
			f.PerPage, err = strconv.Atoi(v)
		case "status":
			f.Status = payment.Status(v)
		case "operator":
			f.Operator = payment.Operator(v)
		case "from":
			f.From, err = parseBound(v, false)
		case "to":
			f.To, err = parseBound(v, true)
		default:
			fields[name] = "unknown parameter"
		}
		if err != nil {
			fields[name] = "has an invalid value"
		}
	}
	if err := f.Validate(); err != nil {
		e := err.(*payment.Error)
		for k, v := range e.Fields {
			if _, seen := fields[k]; !seen {
				fields[k] = v
			}
		}
	}
	if len(fields) > 0 {
		return f, &payment.Error{Code: payment.EINVALID, Message: "invalid list filter", Fields: fields}
	}
	return f, nil
}

// parseBound accepts RFC 3339 or a bare date; a bare date covers the whole
// UTC day, so to=2026-11-01 includes everything created that day.
func parseBound(v string, end bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, err
	}
	if end {
		return d.Add(24*time.Hour - time.Microsecond), nil
	}
	return d, nil
}
