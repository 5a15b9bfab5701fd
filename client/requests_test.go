package client

// What the client refuses to send, or to follow, before the API sees it.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRedirectIsNotFollowed: the API never redirects. A redirect (here to
// another port of the same host, where Go's client keeps the
// Authorization header) is an UNEXPECTED_RESPONSE, and the key stays home.
func TestRedirectIsNotFollowed(t *testing.T) {
	var leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
	}))
	defer elsewhere.Close()
	for _, hc := range []*http.Client{nil, {}} { // the default client and one of the caller's
		s := newScripted(t, answer{http.StatusTemporaryRedirect, map[string]string{"Location": elsewhere.URL + "/v1/transactions"}, ""})
		c, _ := newTestClient(s, WithHTTPClient(hc))
		_, err := c.ListTransactions(context.Background(), ListParams{})
		if !errors.Is(err, ErrUnexpectedResponse) {
			t.Errorf("a 307: %v, want UNEXPECTED_RESPONSE", err)
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the API key went to the redirect's target %d times", n)
	}
}

// TestInvalidUTF8IsRefused: encoding/json would replace an invalid byte
// with U+FFFD, and the payment would carry text the caller did not write.
// Nothing is sent; the error names the field.
func TestInvalidUTF8IsRefused(t *testing.T) {
	s := newScripted(t, answer{http.StatusCreated, nil, okTx})
	c, _ := newTestClient(s)
	_, err := c.CreateTransaction(context.Background(), CreateTransactionParams{Reference: "r-1", Amount: 1500,
		Operator: OperatorAirtel, PhoneNumber: "+23560000001", Description: "a\xffb"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidRequest || e.Fields["description"] == "" {
		t.Fatalf("got %v, want INVALID_REQUEST naming description", err)
	}
	if n := s.requests.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestEmptyIDIsInvalidRequest: the client's own refusals are
// INVALID_REQUEST, never the API's VALIDATION_ERROR.
func TestEmptyIDIsInvalidRequest(t *testing.T) {
	s := newScripted(t, answer{http.StatusOK, nil, okTx})
	c, _ := newTestClient(s)
	if _, err := c.GetTransaction(context.Background(), ""); !errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrValidation) {
		t.Errorf("GetTransaction(\"\"): %v, want INVALID_REQUEST", err)
	}
	if n := s.requests.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestNegativeListParamsAreSent: 0 means the default; a negative page or
// per_page goes out as it is (the API answers 400) instead of silently
// becoming the first page.
func TestNegativeListParamsAreSent(t *testing.T) {
	s := newScripted(t, answer{http.StatusOK, nil, `{"data":[],"pagination":{"page":1,"per_page":20,"total":0,"total_pages":0}}`})
	c, _ := newTestClient(s)
	for _, p := range []ListParams{{Page: -1}, {PerPage: -5}} {
		if _, err := c.ListTransactions(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		if q := s.lastReq.Load().URL.RawQuery; !strings.Contains(q, "=-") {
			t.Errorf("%+v sent %q", p, q)
		}
	}
	c.ListTransactions(context.Background(), ListParams{})
	if q := s.lastReq.Load().URL.RawQuery; q != "" {
		t.Errorf("the zero ListParams sent %q, want nothing", q)
	}
}
