package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/momopay/momopay/client"
	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/testserver"
)

func testDuplicateReference(t *testing.T, srv *testserver.Server) {
	c, tr := newMerchant(t, srv)
	ctx := context.Background()
	p := payment(phoneNoAnswer)
	first, err := c.CreateTransaction(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	again := p
	again.Amount = 99000 // other parameters are ignored: the reference is the key
	_, err = c.CreateTransaction(ctx, again)
	e := apiError(t, err, client.ErrDuplicateReference, 409)
	if e.ExistingTransactionID != first.ID {
		t.Errorf("existing_transaction_id = %q, want %q", e.ExistingTransactionID, first.ID)
	}
	if n := len(tr.log()); n != 2 {
		t.Errorf("%d requests, want 2: a 409 on the first attempt is the caller's", n)
	}
	got, err := c.GetTransaction(ctx, first.ID)
	if err != nil || got.Amount != 2500 {
		t.Errorf("stored transaction changed: %+v, %v", got, err)
	}
}

func testRetryOnGatewayDown(t *testing.T, srv *testserver.Server) {
	_, key := srv.NewMerchant(t)
	ctx := context.Background()
	p := payment(phoneUnavailable)
	p.Operator = client.OperatorMoov // keep the simulated outage off AIRTEL's circuit breaker

	// The sandbox asks for retry_after 2 s; a client allowing that wait
	// retries after it.
	tr := &transport{}
	c := newClient(srv, key, tr, client.WithMaxRetries(1), client.WithMaxRetryWait(5*time.Second))
	start := time.Now()
	_, err := c.CreateTransaction(ctx, p)
	e := apiError(t, err, client.ErrGatewayUnavailable, 503)
	if e.RetryAfter != 2*time.Second {
		t.Errorf("RetryAfter = %v, want the sandbox's retry_after of 2s", e.RetryAfter)
	}
	want := []string{"POST /v1/transactions", "POST /v1/transactions"}
	if got := tr.log(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests = %v, want %v (1 + 1 retry)", got, want)
	}
	if d := time.Since(start); d < e.RetryAfter {
		t.Errorf("retried after %v, before the retry_after of %v", d, e.RetryAfter)
	}

	// A client whose longest wait is shorter returns the 503 at once rather
	// than retrying before the service asked, which would be refused too.
	tr = &transport{}
	c = newClient(srv, key, tr) // waits of at most 50 ms
	start = time.Now()
	_, err = c.CreateTransaction(ctx, p)
	e = apiError(t, err, client.ErrGatewayUnavailable, 503)
	if n := len(tr.log()); n != 1 || e.RetryAfter != 2*time.Second {
		t.Errorf("%d requests, RetryAfter %v; want 1 request and the retry_after to honour", n, e.RetryAfter)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the 503 took %v to come back, want it at once", d)
	}

	// A 503 keeps nothing: the same reference works once the payer is reachable.
	p.PhoneNumber = phoneSuccess
	tx, err := c.CreateTransaction(ctx, p)
	if err != nil || tx.Reference != p.Reference {
		t.Fatalf("same reference after a 503: %+v, %v", tx, err)
	}
}

func testRecoverLostCreate(t *testing.T, srv *testserver.Server) {
	_, key := srv.NewMerchant(t)
	tr := &transport{failNth: 1, afterRun: true}
	c := newClient(srv, key, tr)
	ctx := context.Background()
	p := payment(phoneNoAnswer)
	tx, err := c.CreateTransaction(ctx, p)
	if err != nil {
		t.Fatalf("CreateTransaction after a lost answer: %v", err)
	}
	want := []string{"POST /v1/transactions", "POST /v1/transactions", "GET /v1/transactions/" + tx.ID}
	if got := tr.log(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests = %v, want %v", got, want)
	}
	l, err := c.ListTransactions(ctx, client.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Pagination.Total != 1 || l.Data[0].ID != tx.ID || tx.Reference != p.Reference || tx.Amount != p.Amount {
		t.Errorf("got %+v; list %+v: want the one transaction the lost attempt created", tx, l)
	}
}

func testRetryMeetsOtherPayment(t *testing.T, srv *testserver.Server) {
	_, key := srv.NewMerchant(t)
	ctx := context.Background()
	earlier := payment(phoneNoAnswer)
	if _, err := newClient(srv, key, &transport{}).CreateTransaction(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	// The merchant reuses the reference for another amount, and its first
	// attempt never reaches the server: the retry's 409 is not ours.
	tr := &transport{failNth: 1}
	reused := earlier
	reused.Amount = 7000
	_, err := newClient(srv, key, tr).CreateTransaction(ctx, reused)
	e := apiError(t, err, client.ErrDuplicateReference, 409)
	if e.ExistingTransactionID == "" {
		t.Error("no existing_transaction_id")
	}
}

// testRateLimitedRetryMeetsOlderPayment: a create refused with 429 did
// nothing, so the 409 its retry meets is an older payment's, even one with
// the same amount, operator and phone: it is returned as the conflict, not
// as the payment this call made (an old SUCCESS would read as a new one).
func testRateLimitedRetryMeetsOlderPayment(t *testing.T, engine string) {
	srv := testserver.Start(t, testserver.Options{DB: engine, RateLimit: api.RateLimit{PerSecond: 1, Burst: 2}})
	_, key := srv.NewMerchant(t)
	ctx := context.Background()
	tr := &transport{}
	c := newClient(srv, key, tr, client.WithMaxRetryWait(3*time.Second))
	p := payment(phoneNoAnswer)
	older, err := c.CreateTransaction(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTransaction(ctx, older.ID); err != nil { // the last token
		t.Fatal(err)
	}
	_, err = c.CreateTransaction(ctx, p)
	e := apiError(t, err, client.ErrDuplicateReference, 409)
	if e.ExistingTransactionID != older.ID {
		t.Errorf("existing_transaction_id = %q, want %q", e.ExistingTransactionID, older.ID)
	}
	want := []string{"POST /v1/transactions", "GET /v1/transactions/" + older.ID, "POST /v1/transactions", "POST /v1/transactions"}
	if got := tr.log(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests = %v, want %v (the 429, then its retry's 409)", got, want)
	}
}
