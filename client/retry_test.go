package client

// These tests script answers the real server cannot give on demand (429,
// a proxy's HTML page, a garbled body) to pin down the retry policy and the
// error decoding. The API methods themselves are tested against the real
// server in client_server_test.go.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
	s := newScripted(t, answer{503, map[string]string{"X-Request-Id": "req-9"}, gatewayDown})
	c, waits := newTestClient(s)
	_, err := c.GetTransaction(context.Background(), "t1")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrGatewayUnavailable) {
		t.Fatalf("err = %v, want GATEWAY_UNAVAILABLE", err)
	}
	if e.Status != 503 || e.RetryAfter != time.Minute || e.RequestID != "req-9" || e.Message != "operator down" {
		t.Errorf("error = %+v", e)
	}
	if got := s.requests.Load(); got != 1+DefaultMaxRetries {
		t.Errorf("requests = %d, want %d", got, 1+DefaultMaxRetries)
	}
	want := []time.Duration{DefaultMaxRetryWait, DefaultMaxRetryWait} // 60s capped
	if len(*waits) != 2 || (*waits)[0] != want[0] || (*waits)[1] != want[1] {
		t.Errorf("waits = %v, want %v", *waits, want)
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
		{"no retry past the deadline", answer{503, nil, gatewayDown}, nil, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second) // wait would be 10s
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
	s := newScripted(t, answer{503, nil, gatewayDown})
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
	if !errors.Is(err, ErrGatewayUnavailable) {
		t.Errorf("err = %v, want the 503 that was being waited on", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v to be noticed", d)
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
