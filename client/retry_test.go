package client

// These tests script answers the real server cannot give on demand (429,
// a proxy's HTML page, a garbled body) to pin down the retry policy and the
// error decoding. The API methods themselves are tested against the real
// server in client_server_test.go.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// scripted serves the answers in order, repeating the last one, and counts
// requests.
type scripted struct {
	srv      *httptest.Server
	requests atomic.Int32
	lastReq  atomic.Pointer[http.Request]
}

type answer struct {
	status int
	header map[string]string
	body   string
}

func newScripted(t *testing.T, answers ...answer) *scripted {
	t.Helper()
	s := &scripted{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.requests.Add(1))
		s.lastReq.Store(r.Clone(context.Background()))
		a := answers[min(n, len(answers))-1]
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		w.Write([]byte(a.body))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// newTestClient returns a client on s whose sleeps are recorded, not slept.
func newTestClient(s *scripted, opts ...Option) (*Client, *[]time.Duration) {
	var waits []time.Duration
	c := New("service_live_test", append([]Option{WithBaseURL(s.srv.URL)}, opts...)...)
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, &waits
}

const (
	okTx        = `{"id":"t1","reference":"r","amount":100,"currency":"XAF","operator":"AIRTEL","status":"PENDING"}`
	rateLimited = `{"error":{"code":"RATE_LIMITED","message":"slow down","status":429,"retry_after":3}}`
	gatewayDown = `{"error":{"code":"GATEWAY_UNAVAILABLE","message":"operator down","status":503,"retry_after":60}}`
	gatewayBlip = `{"error":{"code":"GATEWAY_UNAVAILABLE","message":"operator down","status":503,"retry_after":2}}`
)

func TestRetryHonoursRetryAfter(t *testing.T) {
	s := newScripted(t, answer{429, map[string]string{"X-Request-Id": "req-1"}, rateLimited}, answer{200, nil, okTx})
	c, waits := newTestClient(s)
	tx, err := c.GetTransaction(context.Background(), "t1")
	if err != nil || tx.ID != "t1" {
		t.Fatalf("GetTransaction = %v, %v", tx, err)
	}
	if got := s.requests.Load(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
	if len(*waits) != 1 || (*waits)[0] != 3*time.Second {
		t.Errorf("waits = %v, want [3s] from retry_after", *waits)
	}
}

func TestRetryGivesUpAfterMaxRetries(t *testing.T) {
	s := newScripted(t, answer{503, map[string]string{"X-Request-Id": "req-9"}, gatewayBlip})
	c, waits := newTestClient(s)
	_, err := c.GetTransaction(context.Background(), "t1")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrGatewayUnavailable) {
		t.Fatalf("err = %v, want GATEWAY_UNAVAILABLE", err)
	}
	if e.Status != 503 || e.RetryAfter != 2*time.Second || e.RequestID != "req-9" || e.Message != "operator down" {
		t.Errorf("error = %+v", e)
	}
	if got := s.requests.Load(); got != 1+DefaultMaxRetries {
		t.Errorf("requests = %d, want %d", got, 1+DefaultMaxRetries)
	}
	want := []time.Duration{2 * time.Second, 2 * time.Second}
	if len(*waits) != 2 || (*waits)[0] != want[0] || (*waits)[1] != want[1] {
		t.Errorf("waits = %v, want %v", *waits, want)
	}
}

// A retry_after beyond the longest wait is not cut short: a retry sooner than
// the service asked would be refused too, so the failure comes back at once
// with the delay to honour.
func TestRetryAfterBeyondMaxWaitIsReturned(t *testing.T) {
	s := newScripted(t, answer{503, nil, gatewayDown}) // retry_after 60 s, over the 10 s default
	c, waits := newTestClient(s)
	_, err := c.GetTransaction(context.Background(), "t1")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeGatewayUnavailable || e.RetryAfter != time.Minute {
		t.Fatalf("err = %#v, want GATEWAY_UNAVAILABLE with RetryAfter 1m", err)
	}
	if got := s.requests.Load(); got != 1 || len(*waits) != 0 {
		t.Errorf("%d requests after waits %v, want 1 and no wait", got, *waits)
	}

	// A caller who allows the wait gets it in full.
	s = newScripted(t, answer{503, nil, gatewayDown}, answer{200, nil, okTx})
	c, waits = newTestClient(s, WithMaxRetryWait(time.Minute))
	if _, err := c.GetTransaction(context.Background(), "t1"); err != nil {
		t.Fatalf("with WithMaxRetryWait(1m): %v", err)
	}
	if len(*waits) != 1 || (*waits)[0] != time.Minute {
		t.Errorf("waits = %v, want [1m]", *waits)
	}
}

func TestRetryPolicy(t *testing.T) {
	tests := []struct {
		name     string
		answer   answer
		opts     []Option
		ctx      func() (context.Context, context.CancelFunc)
		requests int32
	}{
		{"validation is final", answer{400, nil, `{"error":{"code":"VALIDATION_ERROR","message":"bad","status":400}}`}, nil, nil, 1},
		{"500 is final", answer{500, nil, `{"error":{"code":"INTERNAL_ERROR","message":"oops","status":500}}`}, nil, nil, 1},
		{"retries off", answer{503, nil, gatewayDown}, []Option{WithMaxRetries(0)}, nil, 1},
		{"proxy 502 is retried", answer{502, nil, `<html>bad gateway</html>`}, nil, nil, 3},
		{"no retry past the deadline", answer{429, nil, rateLimited}, nil, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second) // wait would be 3s
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScripted(t, tt.answer)
			c, _ := newTestClient(s, tt.opts...)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			if _, err := c.GetTransaction(ctx, "t1"); err == nil {
				t.Fatal("no error")
			}
			if got := s.requests.Load(); got != tt.requests {
				t.Errorf("requests = %d, want %d", got, tt.requests)
			}
		})
	}
}

func TestCancelWhileWaitingReturnsLastError(t *testing.T) {
	s := newScripted(t, answer{429, nil, rateLimited})
	c := New("k", WithBaseURL(s.srv.URL))
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel once the client is waiting to retry (not merely once the
	// server has seen the request: the 503 might not have reached the
	// client yet), then let the real sleep notice it.
	realSleep := c.sleep
	c.sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return realSleep(ctx, d)
	}
	start := time.Now()
	_, err := c.GetTransaction(ctx, "t1")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeRateLimited || e.RetryAfter != 3*time.Second {
		t.Errorf("err = %#v, want the 429 that was being waited on", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v does not match context.Canceled, why the call stopped", err)
	}
	if s.requests.Load() != 1 {
		t.Errorf("requests = %d, want 1", s.requests.Load())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v to be noticed", d)
	}
}

// A request the client cannot build is an *Error like any other failure,
// sent nowhere and not retried.
func TestInvalidRequest(t *testing.T) {
	s := newScripted(t, answer{200, nil, okTx})
	c, waits := newTestClient(s, WithBaseURL("http://api example.td")) // a space in the host
	_, err := c.GetTransaction(context.Background(), "t1")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalidRequest) || e.Status != 0 {
		t.Fatalf("err = %#v, want *Error INVALID_REQUEST", err)
	}
	var urlErr *url.Error
	if !errors.As(err, &urlErr) {
		t.Errorf("%v does not wrap the *url.Error behind it", err)
	}
	if len(*waits) != 0 || s.requests.Load() != 0 {
		t.Errorf("waits %v, %d requests; want no retry and nothing sent", *waits, s.requests.Load())
	}

	// A base URL without a scheme is no host at all to Go: refused, not
	// retried as a network error.
	for _, base := range []string{"api.example.td", "ftp://api.example.td", "https://"} {
		c, waits := newTestClient(s, WithBaseURL(base))
		_, err := c.GetTransaction(context.Background(), "t1")
		if !errors.Is(err, ErrInvalidRequest) || len(*waits) != 0 || s.requests.Load() != 0 {
			t.Errorf("base URL %q: err = %v, waits %v; want INVALID_REQUEST at once", base, err, *waits)
		}
	}

	// No API method sends a body that cannot be encoded; call is where it
	// would fail.
	_, err = c.call(context.Background(), http.MethodPost, "/v1/transactions", nil, make(chan int), nil)
	var jsonErr *json.UnsupportedTypeError
	if !errors.Is(err, ErrInvalidRequest) || !errors.As(err, &jsonErr) {
		t.Errorf("encoding failure: err = %#v, want INVALID_REQUEST wrapping the JSON error", err)
	}
}

func TestUnexpectedResponses(t *testing.T) {
	tests := []struct {
		name   string
		answer answer
		status int
	}{
		{"HTML 404 from a wrong base URL", answer{404, map[string]string{"Content-Type": "text/html"}, "<h1>Not Found</h1>"}, 404},
		{"JSON that is not the envelope", answer{400, nil, `{"message":"bad"}`}, 400},
		{"2xx that does not decode", answer{200, nil, `{"id": 42`}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestClient(newScripted(t, tt.answer))
			_, err := c.GetTransaction(context.Background(), "t1")
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeUnexpectedResponse || e.Status != tt.status {
				t.Fatalf("err = %#v, want UNEXPECTED_RESPONSE with status %d", err, tt.status)
			}
			if errors.Is(err, ErrNotFound) {
				t.Error("a page that is not ours must not read as NOT_FOUND")
			}
		})
	}
}

func TestRequestHeadersAndQuery(t *testing.T) {
	s := newScripted(t, answer{200, nil, `{"data":[],"pagination":{"page":2,"per_page":10,"total":0,"total_pages":0}}`})
	c, _ := newTestClient(s, WithUserAgent("shop/1.4"))
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.FixedZone("WAT", 3600))
	_, err := c.ListTransactions(context.Background(), ListParams{
		Page: 2, PerPage: 10, Status: StatusSuccess, Operator: OperatorMoov, From: from,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := s.lastReq.Load()
	if got := r.Header.Get("Authorization"); got != "Bearer service_live_test" {
		t.Errorf("Authorization = %q", got)
	}
	if got := r.Header.Get("User-Agent"); got != "shop/1.4 momopay-go/"+Version {
		t.Errorf("User-Agent = %q", got)
	}
	want := "from=2026-10-31T23%3A00%3A00Z&operator=MOOV&page=2&per_page=10&status=SUCCESS"
	if r.URL.Path != "/v1/transactions" || r.URL.RawQuery != want {
		t.Errorf("request = %s?%s, want query %s", r.URL.Path, r.URL.RawQuery, want)
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An unset environment variable passed to WithBaseURL must not leave the
// client without a base URL, failing every call as a retried NETWORK_ERROR.
func TestEmptyBaseURLKeepsDefault(t *testing.T) {
	var got []string
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.URL.String())
		return nil, errors.New("not sent in this test")
	})}
	c := New("k", WithBaseURL(""), WithHTTPClient(hc), WithMaxRetries(0))
	c.GetTransaction(context.Background(), "t1")
	if want := DefaultBaseURL + "/v1/transactions/t1"; len(got) != 1 || got[0] != want {
		t.Errorf("requests = %q, want [%q]", got, want)
	}
}
