package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/payment"
)

// Payments is what the handlers need from payment.Service.
type Payments interface {
	Initiate(ctx context.Context, merchantID string, req payment.CreateRequest) (*payment.Transaction, error)
	Get(ctx context.Context, merchantID, id string) (*payment.Transaction, error)
	List(ctx context.Context, merchantID string, f payment.ListFilter) (*payment.Page, error)
	HandleCallback(ctx context.Context, op payment.Operator, cb operator.Callback) error
}

// MaxBodyBytes bounds request bodies (DESIGN.md §4).
const MaxBodyBytes = 64 << 10

// listItemJSON is a transaction as a list page carries it (contract §2.1):
// without description and expires_at.
type listItemJSON struct {
	ID          string `json:"id"`
	Reference   string `json:"reference"`
	InternalRef string `json:"internal_ref"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Operator    string `json:"operator"`
	PhoneNumber string `json:"phone_number"`
	Status      string `json:"status"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// transactionJSON is a whole Transaction on the wire, as a create and a
// get answer it: description is null when the merchant gave none.
type transactionJSON struct {
	listItemJSON
	Description *string `json:"description"`
	ExpiresAt   string  `json:"expires_at"`
}

func toListItem(t *payment.Transaction) listItemJSON {
	return listItemJSON{
		ID: t.ID, Reference: t.Reference, InternalRef: t.InternalRef, Amount: t.Amount, Currency: t.Currency,
		Operator: string(t.Operator), PhoneNumber: t.PhoneNumber, Status: string(t.Status),
		CreatedAt: payment.FormatTime(t.CreatedAt), UpdatedAt: payment.FormatTime(t.UpdatedAt),
	}
}

func toJSON(t *payment.Transaction) transactionJSON {
	return transactionJSON{listItemJSON: toListItem(t), Description: t.Description, ExpiresAt: payment.FormatTime(t.ExpiresAt)}
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
		writeJSON(w, http.StatusCreated, toJSON(t))
	})
}

func (s *Server) handleGetTransaction() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A UUID's hex digits are case-insensitive on input (RFC 9562), so
		// an id in upper or mixed case names the same transaction; other
		// spellings (braces, urn:uuid:, no dashes) are no ids (ValidID).
		merchant, id := merchantID(r.Context()), strings.ToLower(r.PathValue("id"))
		if answer, ok := s.finals.get(merchant, id); ok {
			writeJSONBytes(w, http.StatusOK, answer)
			return
		}
		t, err := s.payments.Get(r.Context(), merchant, id)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		answer, err := encodeJSON(toJSON(t))
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if t.Status.Final() {
			s.finals.keep(merchant, id, answer)
		}
		writeJSONBytes(w, http.StatusOK, answer)
	})
}

type pagination struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Total      int `json:"total"`
	TotalPages int `json:"total_pages"`
}

type listJSON struct {
	Data       []listItemJSON `json:"data"`
	Pagination pagination     `json:"pagination"`
}

func (s *Server) handleListTransactions() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := parseListFilter(r.URL.RawQuery)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		page, err := s.payments.List(r.Context(), merchantID(r.Context()), f)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		out := listJSON{Data: make([]listItemJSON, 0, len(page.Transactions)), Pagination: pagination{
			Page: f.Page, PerPage: f.PerPage, Total: page.Total, TotalPages: (page.Total + f.PerPage - 1) / f.PerPage,
		}}
		for i := range page.Transactions {
			out.Data = append(out.Data, toListItem(&page.Transactions[i]))
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// errTooLarge is decodeCreateRequest's sentinel for a body over the limit.
var errTooLarge = errors.New("request body exceeds 64 KiB")

func (s *Server) writeDecodeError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errTooLarge):
		writeProblem(w, http.StatusRequestEntityTooLarge, codeTooLarge, err.Error())
	default:
		writeError(w, r, s.log, err)
	}
}

// jsonBody reports whether a request's Content-Type announces JSON. A
// request without one is read as JSON too: it is what the API takes, and
// clients that post a JSON string without naming its type are common. A
// body announced as something else (a form, text) is the contract's "wrong
// format": 400 VALIDATION_ERROR, naming the header to send. JSON is UTF-8
// (RFC 8259): a body announced in another charset would be read wrongly,
// so it is refused as well.
func jsonBody(contentType string) bool {
	if strings.TrimSpace(contentType) == "" {
		return true
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return false
	}
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// integerPattern is a JSON number without fraction or exponent: the
// contract's amounts have no decimals, and 1e2 or 100.0 are refused as such.
var integerPattern = regexp.MustCompile(`^-?[0-9]+$`)

// decodeCreateRequest reads the body field by field, so that every field
// with a wrong type, and every unknown or missing field, is named at once.
func decodeCreateRequest(w http.ResponseWriter, r *http.Request) (payment.CreateRequest, error) {
	var req payment.CreateRequest
	if len(r.Header.Values("Content-Type")) > 1 {
		// Which one counts would be a guess, and a proxy may guess
		// otherwise (as with two Authorization headers).
		return req, bodyError("must be sent with one Content-Type header, not several")
	}
	if !jsonBody(r.Header.Get("Content-Type")) {
		return req, bodyError("must be JSON, sent with Content-Type: application/json")
	}
	if ce := r.Header.Values("Content-Encoding"); len(ce) > 1 || len(ce) == 1 && !strings.EqualFold(strings.TrimSpace(ce[0]), "identity") {
		// Read as it came, a compressed body is bytes that are not JSON.
		return req, bodyError("must not be compressed: send it without Content-Encoding")
	}
	if r.ContentLength > MaxBodyBytes {
		// Announced too large: refused before reading (and before a
		// client waiting on Expect: 100-continue sends it).
		return req, errTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return req, errTooLarge
	}
	if err != nil {
		return req, bodyError("could not be read")
	}
	raw, err := decodeObject(body)
	if err != nil {
		return req, err
	}

	problems := map[string]string{}
	str := func(name string, into *string) {
		v, ok := raw[name]
		delete(raw, name)
		switch {
		case !ok || string(v) == "null":
			problems[name] = "is required"
		case !isRawText(v):
			problems[name] = rawTextProblem
		case json.Unmarshal(v, into) != nil:
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
	case len(v) > 0 && (v[0] == '"' || v[0] == '[' || v[0] == '{' || v[0] == 't' || v[0] == 'f'):
		problems["amount"] = "must be a number (a whole number of XAF), not a string, boolean, array or object"
	case !integerPattern.Match(v):
		problems["amount"] = "must be a whole number of XAF, without decimals or exponent (1500, not 1500.0 or 1.5e3)"
	default:
		// A well-formed integer beyond int64 is a value problem (422), not a
		// form one: ParseInt saturates to the nearest int64, which Validate
		// then finds above MaxAmount (or below MinAmount).
		n, _ := strconv.ParseInt(string(v), 10, 64)
		req.Amount = n
	}
	delete(raw, "amount")

	if v, ok := raw["description"]; ok && string(v) != "null" {
		var d string
		if !isRawText(v) {
			problems["description"] = rawTextProblem
		} else if json.Unmarshal(v, &d) != nil {
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
