package client_test

// The API methods are tested against the real momopay server, started
// in-process on each database engine by internal/testserver: no mocks, so a
// disagreement between the SDK and the service fails here.

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/client"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// Sandbox payer numbers (internal/operator/sandbox).
const (
	phoneSuccess     = "+23560000001" // confirms after ~2 s
	phoneFailure     = "+23560000002" // refuses after ~2 s
	phoneNoAnswer    = "+23560000003" // stays PENDING until expires_at
	phoneUnavailable = "+23560000005" // the operator refuses the push: 503
	phoneByHand      = "+23566000001" // PENDING until answered (App.AnswerSandboxPayment)
)

func TestAgainstServer(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		srv := testserver.Start(t, testserver.Options{DB: engine})
		for name, test := range map[string]func(*testing.T, *testserver.Server){
			"CreateAndSettle":        testCreateAndSettle,
			"Validation":             testValidation,
			"Unauthorized":           testUnauthorized,
			"NotFound":               testNotFound,
			"DuplicateReference":     testDuplicateReference,
			"PayloadTooLarge":        testPayloadTooLarge,
			"RetryOnGatewayDown":     testRetryOnGatewayDown,
			"RecoverLostCreate":      testRecoverLostCreate,
			"RetryMeetsOtherPayment": testRetryMeetsOtherPayment,
			"ListAndIterate":         testListAndIterate,
			"IterateWhileSettling":   testIterateWhileSettling,
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				test(t, srv)
			})
		}
		t.Run("NetworkError", func(t *testing.T) {
			t.Parallel()
			testNetworkError(t, engine)
		})
		t.Run("IterateWithinOneInstant", func(t *testing.T) {
			t.Parallel()
			testIterateWithinOneInstant(t, engine)
		})
		t.Run("RateLimitedRetryMeetsOlderPayment", func(t *testing.T) {
			t.Parallel()
			testRateLimitedRetryMeetsOlderPayment(t, engine)
		})
	})
}

// transport records the requests a client sends and can make one of them
// fail, to simulate a connection lost before or after the server acted.
type transport struct {
	mu       sync.Mutex
	requests []string
	failNth  int  // 1-based index of the request to fail; 0 = none
	afterRun bool // fail after the server answered (the answer is lost)
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	tr.mu.Lock()
	tr.requests = append(tr.requests, r.Method+" "+r.URL.Path)
	n := len(tr.requests)
	tr.mu.Unlock()
	if n != tr.failNth {
		return http.DefaultTransport.RoundTrip(r)
	}
	if !tr.afterRun {
		return nil, errors.New("simulated: connection refused")
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil, errors.New("simulated: connection reset after the server answered")
}

func (tr *transport) log() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.requests...)
}

// newClient returns a client on srv with apiKey whose requests tr records;
// retry waits are kept short so tests stay fast.
func newClient(srv *testserver.Server, apiKey string, tr *transport, opts ...client.Option) *client.Client {
	base := []client.Option{
		client.WithBaseURL(srv.URL),
		client.WithHTTPClient(&http.Client{Transport: tr}),
		client.WithMaxRetryWait(50 * time.Millisecond),
	}
	return client.New(apiKey, append(base, opts...)...)
}

// newMerchant gives a test its own merchant, so lists hold only its data.
func newMerchant(t *testing.T, srv *testserver.Server) (*client.Client, *transport) {
	t.Helper()
	_, key := srv.NewMerchant(t)
	tr := &transport{}
	return newClient(srv, key, tr), tr
}

func newReference() string { return "ref-" + rand.Text() }

func payment(phone string) client.CreateTransactionParams {
	return client.CreateTransactionParams{Reference: newReference(), Amount: 2500,
		Operator: client.OperatorAirtel, PhoneNumber: phone}
}

// apiError asserts err is *Error with the code and HTTP status.
func apiError(t *testing.T, err error, sentinel *client.Error, status int) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *client.Error %s", err, err, sentinel.Code)
	}
	if !errors.Is(err, sentinel) || e.Status != status {
		t.Fatalf("err = %v, want %s with HTTP %d", err, sentinel.Code, status)
	}
	if status != 0 && e.RequestID == "" {
		t.Errorf("%s has no request id", e.Code)
	}
	return e
}

func testNetworkError(t *testing.T, engine string) {
	srv := testserver.Start(t, testserver.Options{DB: engine})
	tr := &transport{}
	c := newClient(srv, srv.APIKey, tr)
	srv.Stop()

	ctx := context.Background()
	_, getErr := c.GetTransaction(ctx, "7f8d5e0e-8f7e-4b8e-9d7a-0c5b3b1f2a11")
	_, createErr := c.CreateTransaction(ctx, payment(phoneSuccess))
	_, listErr := c.ListTransactions(ctx, client.ListParams{})
	for _, err := range []error{getErr, createErr, listErr} {
		apiError(t, err, client.ErrNetwork, 0)
		var opErr *net.OpError
		if !errors.As(err, &opErr) {
			t.Errorf("%v does not wrap the *net.OpError behind it", err)
		}
	}
	if n := len(tr.log()); n != 3*(1+client.DefaultMaxRetries) {
		t.Errorf("%d requests for 3 calls, want each retried %d times", n, client.DefaultMaxRetries)
	}
}
