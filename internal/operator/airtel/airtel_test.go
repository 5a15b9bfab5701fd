package airtel_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/airtel"
	"github.com/momopay/momopay/internal/operator/airtel/airtelsim"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const (
	clientID     = "client-id-123"
	clientSecret = "client-secret-SHOULD-NOT-BE-LOGGED"
)

// bundle is an adapter talking to a simulator (or to a fake Airtel
// wrapping it), on a shared clock, with the adapter's log captured.
type bundle struct {
	sim   *airtelsim.Simulator
	ad    *airtel.Adapter
	clk   *clock
	log   *bytes.Buffer
	srv   *httptest.Server
	calls atomic.Int64 // requests that reached the server
	hits  sync.Map     // path -> *atomic.Int64
}

func (b *bundle) count(path string) int64 {
	v, _ := b.hits.LoadOrStore(path, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

// setup serves the simulator, with wrap (if any) around its handler.
func setup(t *testing.T, wrap func(http.Handler) http.Handler, tune func(*airtel.Config)) *bundle {
	t.Helper()
	return setupLedger(t, nil, wrap, tune)
}

// setupLedger is setup with a simulator keeping its records in ledger, as
// the sandbox's does in momopay's database.
func setupLedger(t *testing.T, ledger airtelsim.Ledger, wrap func(http.Handler) http.Handler, tune func(*airtel.Config)) *bundle {
	t.Helper()
	b := &bundle{clk: &clock{now: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}, log: &bytes.Buffer{}}
	b.sim = airtelsim.New(airtelsim.Config{ClientID: clientID, ClientSecret: clientSecret, CallbackSecret: []byte("cb-secret"), Now: b.clk.Now,
		Ledger: ledger, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := b.sim.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.calls.Add(1)
		v, _ := b.hits.LoadOrStore(r.URL.Path, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	var mu sync.Mutex
	cfg := airtel.Config{BaseURL: b.srv.URL, ClientID: clientID, ClientSecret: clientSecret, CallbackSecret: []byte("cb-secret"),
		CallTimeout: 2 * time.Second, RetryAfter: 3 * time.Second, Now: b.clk.Now,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: b.log, mu: &mu}, nil))}
	if tune != nil {
		tune(&cfg)
	}
	b.ad = airtel.New(cfg)
	return b
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var refs atomic.Int64

func pay(phone string) operator.Payment {
	n := refs.Add(1)
	return operator.Payment{Ref: fmt.Sprintf("SERVICE-T%07d", n), TransactionID: fmt.Sprintf("tx-%d", n),
		Amount: 1500, PhoneNumber: "+235" + phone, Description: "Order"}
}

func status(t *testing.T, b *bundle, p operator.Payment) operator.Outcome {
	t.Helper()
	o, err := b.ad.PaymentStatus(t.Context(), p)
	if err != nil {
		t.Fatalf("enquiry: %v", err)
	}
	return o
}

// TestSuccess: the push is taken, the enquiry says in progress until the
// payer answers, then TS with Airtel's id of the payment.
func TestSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	p := pay(airtelsim.PhoneSuccess)
	if _, err := b.ad.RequestPayment(t.Context(), p); err != nil {
		t.Fatalf("push: %v", err)
	}
	if o := status(t, b, p); o.State != operator.Pending || o.Code != "TIP" {
		t.Fatalf("before the payer answered: %+v", o)
	}
	b.clk.Advance(2 * time.Second)
	o := status(t, b, p)
	if o.State != operator.Succeeded || o.OperatorRef != airtelsim.AirtelMoneyID(p.Ref) || o.Reason != "" {
		t.Fatalf("after the payer answered: %+v", o)
	}
	// Every call is logged with its transaction id, operation and code,
	// never with a credential or a token.
	logs := b.log.String()
	for _, want := range []string{"operation=push", "operation=enquiry", "operation=token", "transaction_id=" + p.TransactionID, "outcome_code=TS", "latency_ms="} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, clientSecret) || strings.Contains(logs, "Bearer") || strings.Contains(logs, "access_token") {
		t.Errorf("log shows a credential:\n%s", logs)
	}
}

// TestRefusalCodes: each DP008000010xx refusal is FAILED with its code and
// our reason.
func TestRefusalCodes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for code, want := range map[string]operator.FailureReason{
		"02": operator.ReasonWrongPIN, "03": operator.ReasonLimitExceeded, "04": operator.ReasonInvalidAmount,
		"05": operator.ReasonNoPIN, "07": operator.ReasonInsufficientBalance, "08": operator.ReasonRefused,
		"09": operator.ReasonRefused, "10": operator.ReasonNotPermitted, "24": operator.ReasonTimedOut, "77": operator.ReasonOther,
	} {
		p := pay(airtelsim.PhoneCodePrefix + code)
		if _, err := b.ad.RequestPayment(t.Context(), p); err != nil {
			t.Fatalf("push %s: %v", code, err)
		}
		b.clk.Advance(2 * time.Second)
		o := status(t, b, p)
		if o.State != operator.Failed || o.Code != "DP008000010"+code || o.Reason != want {
			t.Errorf("code %s: %+v, want FAILED %s", code, o, want)
		}
	}
}

// fake answers every Airtel request with a fixed status and body, tokens
// included, and counts the requests.
func fake(t *testing.T, path string, code int, body string) *bundle {
	return setup(t, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				sim.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			io.WriteString(w, body)
		})
	}, nil)
}

// TestPushAnswers: the push is decided from Airtel's codes, never from the
// HTTP status alone. Certain refusals are operator.ErrUnavailable (503,
// nothing kept); a payer's failure code is a *operator.DeclinedError with
// its reason (kept, FAILED); ESB000041 is a push of ours that got through;
// 401, 429, 5xx and unknown codes leave the answer unknown (the payment
// stays PENDING).
func TestPushAnswers(t *testing.T) {
	t.Parallel()
	const push = "/merchant/v1/payments/"
	for _, c := range []struct {
		name   string
		code   int
		body   string
		answer string // taken, refused, declined, unknown
	}{
		{"200 with success=false ESB000011", 200, `{"status":{"code":"200","message":"Failed","result_code":"ESB000011","success":false}}`, "refused"},
		{"200 with a payer refusal code", 200, `{"status":{"code":"200","message":"x","result_code":"ESB000010","response_code":"DP00800001007","success":false}}`, "declined"},
		{"ESB000011 with a payer refusal code", 200, `{"status":{"code":"200","message":"x","result_code":"ESB000011","response_code":"DP00800001007","success":false}}`, "declined"},
		{"400 bad MSISDN", 400, `{"status":{"code":"400","message":"Invalid MSISDN","result_code":"ESB000033","success":false}}`, "refused"},
		{"ESB000041 id already exists", 200, `{"status":{"code":"200","message":"exists","result_code":"ESB000041","success":false}}`, "taken"},
		{"in process", 200, `{"data":{"transaction":{"id":"x","status":"Success."}},"status":{"code":"200","result_code":"ESB000010","response_code":"DP00800001006","success":true}}`, "taken"},
		// A refusal's result code beside a code or status saying the push
		// may have been taken is not a certain refusal: a 503 would free
		// the reference, and the retry would push a second time.
		{"ESB000011 with the ambiguous code", 200, `{"status":{"code":"200","message":"Request timed out, please check transaction status","result_code":"ESB000011","response_code":"DP00800001000","success":false}}`, "unknown"},
		{"ESB000011 with the in-process code and TIP", 200, `{"data":{"transaction":{"id":"x","status":"TIP"}},"status":{"code":"200","result_code":"ESB000011","response_code":"DP00800001006","success":false}}`, "unknown"},
		{"ESB000011 with the success code", 200, `{"status":{"code":"200","result_code":"ESB000011","response_code":"DP00800001001","success":false}}`, "unknown"},
		{"ESB000033 with the ambiguous code", 400, `{"status":{"code":"400","result_code":"ESB000033","response_code":"DP00800001000","success":false}}`, "unknown"},
		{"ESB000011 with TA", 200, `{"data":{"transaction":{"status":"TA"}},"status":{"result_code":"ESB000011","success":false}}`, "unknown"},
		{"success false, then true", 200, `{"status":{"code":"200","result_code":"ESB000011","success":false,"success":true}}`, "unknown"},
		{"result code given twice", 200, `{"status":{"code":"200","result_code":"ESB000010","result_code":"ESB000011","success":false}}`, "unknown"},
		{"200 with an unknown code", 200, `{"status":{"code":"200","message":"??","result_code":"ESB999999","success":false}}`, "unknown"},
		{"200 unreadable", 200, `<html>gateway</html>`, "unknown"},
		{"401 twice", 401, `{"error":"invalid_token"}`, "unknown"},
		{"429", 429, `{"status":{"result_code":"ESB000011","success":false}}`, "unknown"},
		{"500", 500, `{"status":{"result_code":"ESB000011","success":false}}`, "unknown"},
		{"503", 503, ``, "unknown"},
		{"302 claiming in process", 302, `{"data":{"transaction":{"id":"x","status":"Success."}},"status":{"code":"200","result_code":"ESB000010","response_code":"DP00800001006","success":true}}`, "unknown"},
		{"404 claiming in process", 404, `{"data":{"transaction":{"id":"x","status":"Success."}},"status":{"code":"200","result_code":"ESB000010","response_code":"DP00800001006","success":true}}`, "unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := fake(t, push, c.code, c.body)
			_, err := b.ad.RequestPayment(t.Context(), pay("66112233"))
			got := "unknown"
			switch {
			case err == nil:
				got = "taken"
			case errors.As(err, new(*operator.DeclinedError)):
				got = "declined"
				if d, _ := errors.AsType[*operator.DeclinedError](err); d.Outcome.State != operator.Failed ||
					d.Outcome.Reason != operator.ReasonInsufficientBalance || d.Outcome.Code != "DP00800001007" {
					t.Errorf("declined with %+v, want FAILED insufficient_balance DP00800001007", d.Outcome)
				}
			case errors.Is(err, operator.ErrUnavailable):
				got = "refused"
				if ue, _ := errors.AsType[*operator.UnavailableError](err); ue.RetryAfter != 3*time.Second {
					t.Errorf("retry after %s", ue.RetryAfter)
				}
			}
			if got != c.answer {
				t.Fatalf("push answered %q (err %v), want %q", got, err, c.answer)
			}
			if c.code == 401 && b.count(push) != 2 {
				t.Errorf("401: %d pushes, want one more after a fresh token", b.count(push))
			}
		})
	}
}

// TestSimulatorOutage: the sandbox's "operator down" number is a certain
// refusal; an unreachable Airtel too (nothing was sent).
func TestSimulatorOutage(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	if _, err := b.ad.RequestPayment(t.Context(), pay(airtelsim.PhoneUnavailable)); !errors.Is(err, operator.ErrUnavailable) {
		t.Fatalf("outage number: %v", err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	closed := airtel.New(airtel.Config{BaseURL: "http://" + addr, ClientID: "a", ClientSecret: "b"})
	if _, err := closed.RequestPayment(t.Context(), pay(airtelsim.PhoneSuccess)); !errors.Is(err, operator.ErrUnavailable) {
		t.Fatalf("connection refused: %v", err)
	}
}

// TestDuplicatePush: pushing the same transaction.id again (our first push's
// answer was lost) gets ESB000041 from Airtel: the push is taken. So it is
// with a ledger too, where the simulator keeps only when each id was
// pushed, and the payment itself is read from the ledger.
func TestDuplicatePush(t *testing.T) {
	t.Parallel()
	for _, withLedger := range []bool{false, true} {
		t.Run(fmt.Sprintf("ledger=%v", withLedger), func(t *testing.T) {
			t.Parallel()
			p := pay(airtelsim.PhoneSuccess)
			var ledger airtelsim.Ledger
			if withLedger {
				// momopay writes the payment before it pushes.
				ledger = &mapLedger{records: map[string]airtelsim.Record{p.Ref: {ID: p.Ref, MSISDN: strings.TrimPrefix(p.PhoneNumber, "+235"), Amount: p.Amount,
					RequestedAt: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}}}
			}
			var exists atomic.Int64 // answers ESB000041
			b := setupLedger(t, ledger, func(sim http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					rec := httptest.NewRecorder()
					sim.ServeHTTP(rec, r)
					if bytes.Contains(rec.Body.Bytes(), []byte("ESB000041")) {
						exists.Add(1)
					}
					w.WriteHeader(rec.Code)
					w.Write(rec.Body.Bytes())
				})
			}, nil)
			for i := range 2 {
				if _, err := b.ad.RequestPayment(t.Context(), p); err != nil {
					t.Fatalf("push %d: %v", i, err)
				}
			}
			if n, dup := b.sim.Pushes(), exists.Load(); n != 2 || dup != 1 {
				t.Fatalf("%d pushes reached Airtel, %d answered that the id exists", n, dup)
			}
			b.clk.Advance(2 * time.Second) // the simulator's default answer delay
			if o := status(t, b, p); o.State != operator.Succeeded {
				t.Fatalf("after the answer delay: %+v", o)
			}
		})
	}
}

// mapLedger is an airtelsim.Ledger in memory.
type mapLedger struct {
	mu      sync.Mutex
	records map[string]airtelsim.Record
}

func (l *mapLedger) Payment(_ context.Context, id string) (airtelsim.Record, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[id]
	return r, ok, nil
}

func (l *mapLedger) Answer(_ context.Context, id string, approve bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.records[id]
	r.Answered, r.Approved = true, approve
	l.records[id] = r
	return nil
}

// TestTokenLifecycle: one token serves many calls; it is renewed before it
// expires (no request meets a 401 for an old token), and a token Airtel
// revokes early is replaced once, and the call retried.
func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	var unauthorized atomic.Int64
	b := setup(t, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, r)
			if rec.Code == 401 {
				unauthorized.Add(1)
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
	}, nil)
	p := pay(airtelsim.PhoneSuccess)
	if _, err := b.ad.RequestPayment(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		status(t, b, p)
	}
	if n := b.count("/auth/oauth2/token"); n != 1 {
		t.Fatalf("%d token requests for 6 calls, want 1", n)
	}
	b.clk.Advance(150 * time.Second) // the 180 s token is near its end
	status(t, b, p)
	if n, u := b.count("/auth/oauth2/token"), unauthorized.Load(); n != 2 || u != 0 {
		t.Fatalf("near expiry: %d token requests and %d 401s, want 2 and 0", n, u)
	}
	b.sim.RevokeTokens() // Airtel ends the token in the middle of a run
	if o := status(t, b, p); o.State != operator.Succeeded {
		t.Fatalf("after revocation: %+v", o)
	}
	if n, u := b.count("/auth/oauth2/token"), unauthorized.Load(); n != 3 || u != 1 {
		t.Fatalf("after revocation: %d token requests and %d 401s, want 3 and 1", n, u)
	}
}

// TestSlowOperator: an Airtel slower than the call timeout leaves the push
// ambiguous, never refused, and the enquiry unanswered.
func TestSlowOperator(t *testing.T) {
	t.Parallel()
	b := setup(t, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/auth/oauth2/token" {
				select {
				case <-time.After(2 * time.Second):
				case <-r.Context().Done():
				}
			}
			sim.ServeHTTP(w, r)
		})
	}, func(c *airtel.Config) { c.CallTimeout = 200 * time.Millisecond })
	p := pay(airtelsim.PhoneSuccess)
	start := time.Now()
	_, err := b.ad.RequestPayment(t.Context(), p)
	if err == nil || errors.Is(err, operator.ErrUnavailable) {
		t.Fatalf("slow push: %v, want an ambiguous error", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the push waited %s despite a 200ms call timeout", d)
	}
	if _, err := b.ad.PaymentStatus(t.Context(), p); err == nil {
		t.Fatal("slow enquiry: no error")
	}
}

// TestSlowTokenRefusesThePush: a token request that times out means the
// push never left: a refusal (503, nothing kept), not an ambiguous push
// that would keep a payment Airtel never heard of PENDING until TIMEOUT.
func TestSlowTokenRefusesThePush(t *testing.T) {
	t.Parallel()
	b := setup(t, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/auth/oauth2/token" {
				select {
				case <-time.After(2 * time.Second):
				case <-r.Context().Done():
				}
			}
			sim.ServeHTTP(w, r)
		})
	}, func(c *airtel.Config) { c.CallTimeout = 200 * time.Millisecond })
	_, err := b.ad.RequestPayment(t.Context(), pay(airtelsim.PhoneSuccess))
	if !errors.Is(err, operator.ErrUnavailable) {
		t.Fatalf("push after a token timeout: %v, want ErrUnavailable", err)
	}
	if n := b.count("/merchant/v1/payments/"); n != 0 {
		t.Errorf("%d pushes sent without a token", n)
	}
}

// TestTokenOutageIsAskedOnce: while Airtel's token endpoint hangs, the
// pushes that need a token share one request, each gives up when its own
// deadline comes (not in turn behind the others), and a failed request
// answers the next second's pushes without asking again. Before, each push
// asked for its own token under one lock: 40 pushes made 40 requests, one
// after another, each waiting for those before it.
func TestTokenOutageIsAskedOnce(t *testing.T) {
	t.Parallel()
	const hang, refuse, answer = 0, 1, 2
	var mode atomic.Int64 // what the token endpoint does
	b := setup(t, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/auth/oauth2/token" && mode.Load() != answer {
				if mode.Load() == refuse {
					http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
					return
				}
				select { // longer than the pushes wait, shorter than the call timeout
				case <-time.After(600 * time.Millisecond):
				case <-r.Context().Done():
				}
				http.Error(w, "upstream timeout", http.StatusGatewayTimeout)
				return
			}
			sim.ServeHTTP(w, r)
		})
	}, nil)
	push := func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := b.ad.RequestPayment(ctx, pay(airtelsim.PhoneSuccess))
		return time.Since(start), err
	}
	var wg sync.WaitGroup
	var slowest atomic.Int64
	for range 40 {
		wg.Go(func() {
			d, err := push()
			if !errors.Is(err, operator.ErrUnavailable) {
				t.Errorf("push without a token: %v, want ErrUnavailable", err)
			}
			for old := slowest.Load(); int64(d) > old && !slowest.CompareAndSwap(old, int64(d)); old = slowest.Load() {
			}
		})
	}
	wg.Wait()
	if d := time.Duration(slowest.Load()); d > 500*time.Millisecond {
		t.Errorf("the slowest of 40 pushes waited %s with a 150ms deadline", d)
	}
	if n := b.count("/auth/oauth2/token"); n != 1 {
		t.Errorf("%d token requests for 40 pushes at once, want 1", n)
	}
	time.Sleep(700 * time.Millisecond) // the shared request ends, failed
	if _, err := push(); !errors.Is(err, operator.ErrUnavailable) {
		t.Errorf("push within the back-off: %v, want ErrUnavailable", err)
	}
	if n := b.count("/auth/oauth2/token"); n != 1 {
		t.Errorf("%d token requests within the back-off, want 1", n)
	}
	// Past the back-off Airtel is asked again; a refusal is kept as long.
	mode.Store(refuse)
	b.clk.Advance(2 * time.Second)
	for range 3 {
		if _, err := push(); !errors.Is(err, operator.ErrUnavailable) {
			t.Errorf("push with refused credentials: %v, want ErrUnavailable", err)
		}
	}
	if n := b.count("/auth/oauth2/token"); n != 2 {
		t.Errorf("%d token requests after the back-off, want 2", n)
	}
	if n := b.count("/merchant/v1/payments/"); n != 0 {
		t.Fatalf("%d pushes sent without a token", n)
	}
	mode.Store(answer) // and once Airtel gives tokens again, pushes go
	b.clk.Advance(2 * time.Second)
	if _, err := b.ad.RequestPayment(t.Context(), pay(airtelsim.PhoneSuccess)); err != nil {
		t.Errorf("push once tokens come: %v", err)
	}
}

// TestConnectionDroppedAfterSend: Airtel takes the push but the connection
// drops before its answer: the push is ambiguous (the payment stays
// PENDING), and the enquiry settles it.
func TestConnectionDroppedAfterSend(t *testing.T) {
	t.Parallel()
	b := setup(t, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/merchant/v1/payments/" {
				sim.ServeHTTP(w, r)
				return
			}
			sim.ServeHTTP(httptest.NewRecorder(), r) // taken...
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // ...and the answer lost
		})
	}, nil)
	p := pay(airtelsim.PhoneSuccess)
	_, err := b.ad.RequestPayment(t.Context(), p)
	if err == nil || errors.Is(err, operator.ErrUnavailable) {
		t.Fatalf("dropped push: %v, want an ambiguous error", err)
	}
	b.clk.Advance(2 * time.Second)
	if o := status(t, b, p); o.State != operator.Succeeded {
		t.Fatalf("enquiry after the drop: %+v", o)
	}
}

// TestEnquiryAnswers: TE is EXPIRED; TIP, TA, an undocumented TI, an
// unknown status and "no such transaction" keep the payment PENDING with
// their code; 401, 429 and 5xx are errors (ask again).
func TestEnquiryAnswers(t *testing.T) {
	t.Parallel()
	const path = "/standard/v1/payments/SERVICE-FAKE0001"
	tx := func(st string) string {
		return `{"data":{"transaction":{"airtel_money_id":"AM9","id":"SERVICE-FAKE0001","message":"m","status":"` + st + `"}},"status":{"code":"200","result_code":"ESB000010","success":true}}`
	}
	for _, c := range []struct {
		name  string
		code  int
		body  string
		state operator.State
		err   bool
	}{
		{"TE", 200, tx("TE"), operator.Expired, false},
		{"TIP", 200, tx("TIP"), operator.Pending, false},
		{"TA", 200, tx("TA"), operator.Pending, false},
		{"TI", 200, tx("TI"), operator.Pending, false},
		{"unknown", 200, tx("ZZ"), operator.Pending, false},
		{"no such transaction", 200, `{"status":{"code":"200","message":"not found","result_code":"ESB000045","success":false}}`, operator.Pending, false},
		{"429", 429, ``, "", true},
		{"502", 502, `bad gateway`, "", true},
		{"200 unreadable", 200, `<html/>`, "", true},
		// A status is believed only from a successful enquiry about us.
		{"TS about another transaction", 200, strings.Replace(tx("TS"), "SERVICE-FAKE0001", "SERVICE-OTHER000", 1), "", true},
		{"TF about another transaction", 200, strings.Replace(tx("TF"), "SERVICE-FAKE0001", "SERVICE-OTHER000", 1), "", true},
		{"TS with success=false", 200, `{"data":{"transaction":{"id":"SERVICE-FAKE0001","status":"TS"}},"status":{"code":"500","message":"internal error","result_code":"ESB000001","success":false}}`, "", true},
		{"TS in a 400", 400, tx("TS"), "", true},
		{"TF in a 404", 404, tx("TF"), "", true},
		{"TS in a 302", 302, tx("TS"), "", true},
		{"TS", 200, tx("TS"), operator.Succeeded, false},
		{"TS without a success field", 200, `{"data":{"transaction":{"id":"SERVICE-FAKE0001","status":"TS"}},"status":{"code":"200","result_code":"ESB000010"}}`, operator.Succeeded, false},
		{"TS without a status block", 200, `{"data":{"transaction":{"id":"SERVICE-FAKE0001","status":"TS"}}}`, operator.Succeeded, false},
		{"TS without success, failed result code", 200, `{"data":{"transaction":{"id":"SERVICE-FAKE0001","status":"TS"}},"status":{"code":"500","result_code":"ESB000001"}}`, "", true},
		{"TS, id in lower case", 200, strings.Replace(tx("TS"), "SERVICE-FAKE0001", "service-fake0001", 1), operator.Succeeded, false},
		// An answer that says two things says neither (encoding/json
		// would keep the last): ask again.
		{"TS then TF in one transaction", 200, strings.Replace(tx("TS"), `"status":"TS"`, `"status":"TS","status":"TF"`, 1), "", true},
		{"TF then TS in one transaction", 200, strings.Replace(tx("TF"), `"status":"TF"`, `"status":"TF","status":"TS"`, 1), "", true},
		{"two transactions", 200, `{"data":{"transaction":{"id":"SERVICE-FAKE0001","status":"TF"},"transaction":{"id":"SERVICE-FAKE0001","status":"TS"}},"status":{"result_code":"ESB000010","success":true}}`, "", true},
		{"nested 40 deep", 200, strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40), "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := fake(t, path, c.code, c.body)
			o, err := b.ad.PaymentStatus(t.Context(), operator.Payment{Ref: "SERVICE-FAKE0001"})
			if (err != nil) != c.err || o.State != c.state {
				t.Fatalf("got %+v, %v", o, err)
			}
		})
	}
}

// TestCallbacks: a hash in the body or in a header is checked; a wrong
// one is refused; a callback without one, or an adapter without the
// secret, gives an unverified hint.
func TestCallbacks(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	secret := []byte("cb-secret")
	signed := airtelsim.SignedCallback(secret, "SERVICE-X0000001", "TS", "ok", "AM1")
	cb, err := b.ad.ReadCallback(nil, signed)
	if err != nil || cb.Unverified || cb.Ref != "SERVICE-X0000001" || cb.Outcome.State != operator.Succeeded || cb.Outcome.OperatorRef != "AM1" {
		t.Fatalf("signed in the body: %+v %v", cb, err)
	}
	plain := airtelsim.SignedCallback(nil, "SERVICE-X0000001", "TF", "no", "AM1")
	cb, err = b.ad.ReadCallback(map[string][]string{"Hash": {airtel.Hash(secret, plain)}}, plain)
	if err != nil || cb.Unverified || cb.Outcome.State != operator.Failed {
		t.Fatalf("signed in a header: %+v %v", cb, err)
	}
	twice := []byte(`{"transaction":{"id":"SERVICE-X0000001","message":"x","status_code":"TF","status_code":"TS","airtel_money_id":"X"}}`)
	for name, c := range map[string]struct {
		h    map[string][]string
		body []byte
	}{
		"another secret":  {nil, airtelsim.SignedCallback([]byte("forger"), "SERVICE-X0000001", "TS", "ok", "AM1")},
		"altered":         {nil, bytes.Replace(signed, []byte(`"TS"`), []byte(`"TF"`), 1)},
		"header mismatch": {map[string][]string{"Hash": {"AAAA"}}, plain},
		"unreadable":      {nil, []byte(`not json`)},
		// Signed, but saying two things (encoding/json keeps the last).
		"a status twice": {map[string][]string{"Hash": {airtel.Hash(secret, twice)}}, twice},
	} {
		if _, err := b.ad.ReadCallback(c.h, c.body); !errors.Is(err, operator.ErrCallbackRejected) {
			t.Errorf("%s: %v, want rejected", name, err)
		}
	}
	// With a secret, a callback must be signed: without a hash it is
	// refused, not taken as a hint that would make an enquiry.
	for name, body := range map[string][]byte{
		"no hash":    plain,
		"empty hash": []byte(`{"transaction":{"id":"SERVICE-X0000001","message":"x","status_code":"TS","airtel_money_id":"X"},"hash":""}`),
		"null hash":  []byte(`{"transaction":{"id":"SERVICE-X0000001","message":"x","status_code":"TS","airtel_money_id":"X"},"hash":null}`),
	} {
		if cb, err := b.ad.ReadCallback(nil, body); !errors.Is(err, operator.ErrCallbackRejected) {
			t.Errorf("%s with a secret configured: %+v %v, want rejected", name, cb, err)
		}
	}
	noSecret := airtel.New(airtel.Config{BaseURL: b.srv.URL})
	if cb, err := noSecret.ReadCallback(nil, signed); err != nil || !cb.Unverified {
		t.Errorf("no secret configured: %+v %v, want an unverified hint", cb, err)
	}
	if cb, err := noSecret.ReadCallback(nil, twice); !errors.Is(err, operator.ErrCallbackRejected) {
		t.Errorf("a status twice, no secret configured: %+v %v, want rejected", cb, err)
	}
}

// TestRefund: a successful payment is refunded once; a second refund and a
// refund of an unpaid payment are refused.
func TestRefund(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	p := pay(airtelsim.PhoneSuccess)
	if _, err := b.ad.RequestPayment(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	b.clk.Advance(2 * time.Second)
	amid := status(t, b, p).OperatorRef
	out, err := b.ad.Refund(t.Context(), p, amid)
	if err != nil || !out.Refunded {
		t.Fatalf("refund: %+v %v", out, err)
	}
	if out, err := b.ad.Refund(t.Context(), p, amid); err != nil || out.Refunded {
		t.Fatalf("second refund: %+v %v", out, err)
	}
	unpaid := pay(airtelsim.PhoneNoAnswer)
	b.ad.RequestPayment(t.Context(), unpaid)
	if out, err := b.ad.Refund(t.Context(), unpaid, airtelsim.AirtelMoneyID(unpaid.Ref)); err != nil || out.Refunded {
		t.Fatalf("refund of an unpaid payment: %+v %v", out, err)
	}
	if !strings.Contains(b.log.String(), "operation=refund") {
		t.Error("refund not logged")
	}
}

// TestRefundAnswers: only an answer that says the refund happened, or
// certainly did not, is one; in progress, accepted, "try later" or a code
// we do not know leave the refund's fate unknown (an error), never a
// refusal someone could answer by refunding again (which paid twice).
func TestRefundAnswers(t *testing.T) {
	t.Parallel()
	var answer atomic.Value
	b := setup(t, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/standard/v1/payments/refund" {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, answer.Load().(string))
				return
			}
			sim.ServeHTTP(w, r)
		})
	}, nil)
	p := pay(airtelsim.PhoneSuccess)
	const amid = "MP0001"
	for _, c := range []struct {
		name, body        string
		refunded, unknown bool
	}{
		{"done", `{"data":{"transaction":{"airtel_money_id":"MP0001","status":"TS"}},"status":{"result_code":"ESB000010","success":true}}`, true, false},
		{"done, no status", `{"status":{"result_code":"ESB000010","success":true}}`, true, false},
		{"failed", `{"data":{"transaction":{"status":"TF"}},"status":{"result_code":"ESB000011","success":false}}`, false, false},
		{"no such payment", `{"status":{"result_code":"ESB000045","response_code":"DP00800001025","success":false}}`, false, false},
		{"already refunded", `{"status":{"result_code":"ESB000011","message":"Transaction already refunded","success":false}}`, false, false},
		{"in progress", `{"data":{"transaction":{"airtel_money_id":"MP0001","status":"TIP"}},"status":{"result_code":"ESB000010","response_code":"DP00800001006","success":true}}`, false, true},
		{"accepted", `{"data":{"transaction":{"status":"PENDING"}},"status":{"result_code":"ESB000010","message":"Accepted","success":true}}`, false, true},
		{"in progress, no status", `{"status":{"result_code":"ESB000010","response_code":"DP00800001006","success":true}}`, false, true},
		{"try later", `{"status":{"result_code":"ESB000001","message":"Internal error, try later","success":false}}`, false, true},
		{"unknown code", `{"status":{"result_code":"ESB999999","success":false}}`, false, true},
		{"in progress, not a success", `{"data":{"transaction":{"status":"TIP"}},"status":{"result_code":"ESB000011","success":false}}`, false, true},
	} {
		answer.Store(c.body)
		out, err := b.ad.Refund(t.Context(), p, amid)
		switch {
		case c.unknown && err == nil:
			t.Errorf("%s: %+v, want an unknown answer (error)", c.name, out)
		case c.unknown && errors.Is(err, operator.ErrUnavailable):
			t.Errorf("%s: %v, want an unknown answer, not one certainly not sent", c.name, err)
		case !c.unknown && err != nil:
			t.Errorf("%s: %v, want an answer", c.name, err)
		case !c.unknown && out.Refunded != c.refunded:
			t.Errorf("%s: refunded %v, want %v", c.name, out.Refunded, c.refunded)
		}
	}
}

// TestRefundNotSent: a refund whose request never left (no access token
// to be had, or no connection to Airtel) is operator.ErrUnavailable, so
// that it can be asked again; once the request may have reached Airtel
// (the refund endpoint failing after the connection was made), its fate
// is unknown.
func TestRefundNotSent(t *testing.T) {
	t.Parallel()
	var tokenDown, refundDown atomic.Bool
	b := setup(t, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case tokenDown.Load() && r.URL.Path == "/auth/oauth2/token":
				http.Error(w, "down", http.StatusServiceUnavailable)
			case refundDown.Load() && r.URL.Path == "/standard/v1/payments/refund":
				// The connection is cut once the request has arrived.
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
			default:
				sim.ServeHTTP(w, r)
			}
		})
	}, nil)
	p := pay(airtelsim.PhoneSuccess)
	if _, err := b.ad.RequestPayment(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	b.clk.Advance(2 * time.Second)
	amid := status(t, b, p).OperatorRef

	// No token: the adapter's token was fetched for the push, so make it
	// fetch again on a fresh adapter of the same Airtel.
	tokenDown.Store(true)
	fresh := airtel.New(airtel.Config{BaseURL: b.srv.URL, ClientID: clientID, ClientSecret: clientSecret, CallTimeout: 2 * time.Second,
		Now: b.clk.Now, Logger: slog.New(slog.DiscardHandler)})
	if out, err := fresh.Refund(t.Context(), p, amid); !errors.Is(err, operator.ErrUnavailable) || out.Refunded {
		t.Errorf("no access token: %+v %v, want not sent (ErrUnavailable)", out, err)
	}
	if n := b.count("/standard/v1/payments/refund"); n != 0 {
		t.Fatalf("the refund endpoint was called %d times", n)
	}
	tokenDown.Store(false)

	// No connection: nothing listens where Airtel was.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	gone := airtel.New(airtel.Config{BaseURL: closed, ClientID: clientID, ClientSecret: clientSecret, CallTimeout: 2 * time.Second,
		Now: b.clk.Now, Logger: slog.New(slog.DiscardHandler)})
	if _, err := gone.Refund(t.Context(), p, amid); !errors.Is(err, operator.ErrUnavailable) {
		t.Errorf("no connection: %v, want not sent (ErrUnavailable)", err)
	}

	// The request arrived and the connection broke: unknown, not "not
	// sent" (asking again could refund twice).
	refundDown.Store(true)
	if _, err := b.ad.Refund(t.Context(), p, amid); err == nil || errors.Is(err, operator.ErrUnavailable) {
		t.Errorf("connection cut after the request: %v, want an unknown answer", err)
	}
	refundDown.Store(false)

	// And Airtel reachable again: the refund is made.
	if out, err := b.ad.Refund(t.Context(), p, amid); err != nil || !out.Refunded {
		t.Errorf("refund once Airtel is back: %+v %v", out, err)
	}
}

// TestSchedule: enquiries start after FirstEnquiry and back off to 30 s.
func TestSchedule(t *testing.T) {
	t.Parallel()
	ad := airtel.New(airtel.Config{})
	for age, want := range map[time.Duration]time.Duration{
		0: airtel.FirstEnquiry, time.Second: airtel.FirstEnquiry - time.Second, airtel.FirstEnquiry: airtel.FirstEnquiry,
		20 * time.Second: 10 * time.Second, 4 * time.Minute: 30 * time.Second,
	} {
		if got := ad.NextPoll(age); got != want {
			t.Errorf("NextPoll(%s) = %s, want %s", age, got, want)
		}
	}
}
