package moov

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
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/testlog"
)

const (
	testUser     = "merchant-api"
	testPassword = "pa55-word-never-logged"
	testKey      = "0123456789abcdef0123456789abcdef"
)

// clock is a time source the tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type bundle struct {
	op    *Operator
	clock *clock
	logs  *testlog.Buffer
	token string
}

// setup returns an adapter pointed at url, on a fake clock, logging to a
// buffer.
func setup(t *testing.T, url string) bundle {
	t.Helper()
	c := &clock{now: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}
	logs := &testlog.Buffer{}
	op, err := New(Config{URL: url, Username: testUser, Password: testPassword, Key: testKey},
		nil, c.Now, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return bundle{op: op, clock: c, logs: logs, token: op.token}
}

// withSimulator serves a simulator sharing the bundle's clock.
func withSimulator(t *testing.T) (bundle, *Simulator) {
	t.Helper()
	token, _ := Token(testUser, testPassword, testKey)
	b := bundle{clock: &clock{now: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}}
	sim := NewSimulator(SimulatorConfig{Token: token, Now: b.clock.Now})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	nb := setup(t, srv.URL)
	nb.op.now, nb.clock = b.clock.Now, b.clock
	return nb, sim
}

var refs atomic.Int64

func payment(b bundle, phone string) operator.Payment {
	n := refs.Add(1)
	return operator.Payment{Ref: fmt.Sprintf("SERVICE-T%07d", n), MerchantID: "m1", TransactionID: fmt.Sprintf("tx-%d", n),
		Amount: 1500, PhoneNumber: phone, RequestedAt: b.clock.Now()}
}

// fake is a Moov stand-in for the quirks: it answers each call with
// answer(op) and counts the calls.
type fake struct {
	calls  atomic.Int64
	answer func(w http.ResponseWriter, op string)
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	req, err := decodeRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.answer(w, req.Op)
}

func serveFake(t *testing.T, answer func(w http.ResponseWriter, op string)) (bundle, *fake) {
	t.Helper()
	f := &fake{answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return setup(t, srv.URL), f
}

func status(code string) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, op string) {
		w.Write(encodeAnswer(op, answer{Status: code, ReferenceID: "72024103000000009", Description: "D"}))
	}
}

// TestStatusCodes maps every listed getTransactionStatus code, and an
// unknown one.
func TestStatusCodes(t *testing.T) {
	t.Parallel()
	type want struct {
		state operator.State
		busy  bool
		log   string
	}
	cases := map[string]want{
		"0":    {state: operator.Succeeded},
		"100":  {state: operator.Pending},
		"92":   {state: operator.Expired},
		"10":   {state: operator.Failed},
		"95":   {state: operator.Failed},
		"555":  {state: operator.Failed},
		"94":   {state: operator.Pending, log: "moov does not know this payment"},
		"98":   {state: operator.Pending, log: "ALERT"},
		"99":   {busy: true},
		"-1":   {busy: true},
		"7777": {state: operator.Pending, log: "unknown status code"},
	}
	for code := 11; code <= 20; code++ {
		cases[fmt.Sprint(code)] = want{state: operator.Failed}
	}
	reasons := map[string]operator.FailureReason{
		"10": operator.ReasonInsufficientBalance, "12": operator.ReasonInvalidAmount,
		"11": operator.ReasonLimitExceeded, "13": operator.ReasonLimitExceeded, "20": operator.ReasonLimitExceeded,
		"555": operator.ReasonPayerNotRegistered, "95": operator.ReasonOther,
	}
	for code, w := range cases {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			b, _ := serveFake(t, status(code))
			p := payment(b, "+23566000001")
			b.clock.Advance(NotFoundGrace + time.Second)
			o, err := b.op.PaymentStatus(context.Background(), p)
			if w.busy {
				if _, ok := errors.AsType[*BusyError](err); !ok {
					t.Fatalf("got %+v, %v; want BusyError", o, err)
				}
				return
			}
			if err != nil || o.State != w.state {
				t.Fatalf("got %+v, %v; want %s", o, err, w.state)
			}
			if !strings.HasPrefix(o.Detail, "moov "+code+": ") || strings.Contains(o.Detail, "unknown status") != (code == "7777") {
				t.Errorf("detail %q", o.Detail)
			}
			if w.state == operator.Failed && (strings.Contains(o.Detail, "unknown") || o.Reason == "") {
				t.Errorf("failure without a reason: %+v", o)
			}
			if w.state != operator.Failed && o.Reason != "" {
				t.Errorf("reason %q without a failure", o.Reason)
			}
			if o.Code != code || o.OperatorRef != "72024103000000009" {
				t.Errorf("code %q, operator ref %q", o.Code, o.OperatorRef)
			}
			if want, ok := reasons[code]; ok && o.Reason != want {
				t.Errorf("reason %q, want %q", o.Reason, want)
			}
			if w.log != "" && !strings.Contains(b.logs.String(), w.log) {
				t.Errorf("log lacks %q:\n%s", w.log, b.logs)
			}
		})
	}
}

// TestPushAnswers: which push answers are taken, refused for now
// (unavailable), or declined for good (a DeclinedError, FAILED with its
// reason).
func TestPushAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code       string
		retryAfter time.Duration // an UnavailableError with it
		failed     string        // declined: FAILED with this detail
	}{
		{code: "0"}, {code: "100"}, {code: "12345"},
		{code: "99", retryAfter: BusyRetryAfter}, {code: "-1", retryAfter: BusyRetryAfter},
		{code: "98", retryAfter: ConfigRetryAfter}, {code: "4", retryAfter: ConfigRetryAfter},
		{code: "91", retryAfter: ConfigRetryAfter},
		{code: "10", failed: "moov 10: insufficient funds (D)"},
		{code: "555", failed: "moov 555: payer not registered with Moov Money (D)"},
		{code: "3", failed: "moov 3: number not valid (D)"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			b, f := serveFake(t, status(tc.code))
			p := payment(b, "+23566000001")
			_, err := b.op.RequestPayment(context.Background(), p)
			ue, unavailable := errors.AsType[*operator.UnavailableError](err)
			switch {
			case tc.retryAfter != 0:
				if !unavailable || ue.RetryAfter != tc.retryAfter {
					t.Fatalf("got %v; want unavailable, retry after %s", err, tc.retryAfter)
				}
			case tc.failed != "":
				d, declined := errors.AsType[*operator.DeclinedError](err)
				if !declined {
					t.Fatalf("got %v; want the push declined", err)
				}
				if o := d.Outcome; o.State != operator.Failed || o.Detail != tc.failed || o.Code != tc.code || o.Reason == "" {
					t.Fatalf("declined with %+v; want FAILED %q", o, tc.failed)
				}
				if f.calls.Load() != 1 {
					t.Errorf("%d calls to Moov, want the push alone", f.calls.Load())
				}
			case err != nil:
				t.Fatalf("got %v; want taken", err)
			}
		})
	}
}

// TestUnknownIsNeverFailed: HTTP errors, faults, malformed answers, slow
// answers and dropped connections are ambiguous for a push (never
// unavailable) and an error for an enquiry (never an outcome).
func TestUnknownIsNeverFailed(t *testing.T) {
	t.Parallel()
	faultBody := encodeFault("soap:Server", "java.lang.NullPointerException")
	for name, answer := range map[string]func(w http.ResponseWriter, op string){
		"401":            func(w http.ResponseWriter, _ string) { w.WriteHeader(401) },
		"429":            func(w http.ResponseWriter, _ string) { w.WriteHeader(429) },
		"500":            func(w http.ResponseWriter, _ string) { w.WriteHeader(500) },
		"502 html":       func(w http.ResponseWriter, _ string) { w.WriteHeader(502); w.Write([]byte("<html>Bad Gateway</html>")) },
		"503":            func(w http.ResponseWriter, _ string) { w.WriteHeader(503) },
		"fault 500":      func(w http.ResponseWriter, _ string) { w.WriteHeader(500); w.Write(faultBody) },
		"fault 200":      func(w http.ResponseWriter, _ string) { w.Write(faultBody) },
		"malformed":      func(w http.ResponseWriter, _ string) { w.Write([]byte("<soap:Envelope><soap:Body><ns2:")) },
		"no status":      func(w http.ResponseWriter, op string) { w.Write(encodeAnswer(op, answer{Description: "?"})) },
		"status not int": func(w http.ResponseWriter, op string) { w.Write(encodeAnswer(op, answer{Status: "OK"})) },
		"200 empty":      func(w http.ResponseWriter, _ string) {},
		"two answers": func(w http.ResponseWriter, op string) {
			one, other := encodeAnswer(op, answer{Status: "0"}), encodeAnswer(op, answer{Status: "10"})
			// Both <…Response> elements in one body.
			start, end := bytes.Index(other, []byte("<ns2:")), bytes.LastIndex(other, []byte("</soap:Body>"))
			at := bytes.LastIndex(one, []byte("</soap:Body>"))
			w.Write(append(append(one[:at:at], other[start:end]...), one[at:]...))
		},
		// One answer saying two things says neither (encoding/xml would
		// keep the last status): pending then completed, and the reverse.
		"status 100 then 0": func(w http.ResponseWriter, op string) {
			w.Write(bytes.Replace(encodeAnswer(op, answer{Status: "100"}), []byte("</status>"), []byte("</status><status>0</status>"), 1))
		},
		"status 0 then 95": func(w http.ResponseWriter, op string) {
			w.Write(bytes.Replace(encodeAnswer(op, answer{Status: "0"}), []byte("</status>"), []byte("</status><status>95</status>"), 1))
		},
		"nested deep": func(w http.ResponseWriter, op string) {
			deep := strings.Repeat("<a>", 5000) + strings.Repeat("</a>", 5000)
			w.Write(bytes.Replace(encodeAnswer(op, answer{Status: "0"}), []byte("</return>"), []byte(deep+"</return>"), 1))
		},
		"answer 200 of 4": func(w http.ResponseWriter, op string) {
			w.WriteHeader(404)
			w.Write(encodeAnswer(op, answer{Status: "0"}))
		},
		"slow": func(w http.ResponseWriter, op string) {
			time.Sleep(300 * time.Millisecond)
			w.Write(encodeAnswer(op, answer{Status: "0"}))
		},
		"reset": func(w http.ResponseWriter, _ string) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		},
		"dropped": func(w http.ResponseWriter, _ string) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, f := serveFake(t, answer)
			b.op.pushTimeout, b.op.statusTimeout = 100*time.Millisecond, 100*time.Millisecond
			p := payment(b, "+23566000001")
			_, err := b.op.RequestPayment(context.Background(), p)
			if err == nil || errors.Is(err, operator.ErrUnavailable) {
				t.Fatalf("push: got %v; want an ambiguous error", err)
			}
			o, err := b.op.PaymentStatus(context.Background(), p)
			if err == nil {
				t.Fatalf("status: got %+v; want an error", o)
			}
			if f.calls.Load() != 2 {
				t.Errorf("%d calls reached the fake, want 2", f.calls.Load())
			}
			logs := b.logs.String()
			if !strings.Contains(logs, "moov call failed") || !strings.Contains(logs, "operation=getTransactionStatus") {
				t.Errorf("failed calls not logged:\n%s", logs)
			}
		})
	}
}

// TestAnswerAboutAnotherPush: a status answer naming another referenceid
// than our push's, or another of our internal_refs as its transid, is not
// believed (three payments were once marked paid on one Moov transaction);
// one naming ours, or an id of Moov's own as transid, is. Asked by our
// internal_ref (the push's answer lost), any referenceid is Moov's.
func TestAnswerAboutAnotherPush(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name           string
		operatorRef    string
		transid, refid string
		believed       bool
	}{
		{"ours", "MV-OURS", "", "MV-OURS", true},
		{"ours, both named", "MV-OURS", "SERVICE-X0000001", "MV-OURS", true},
		{"moov's own transid", "MV-OURS", "pi_NyM_1642619082990", "MV-OURS", true},
		{"another referenceid", "MV-OURS", "", "MV-SERVICE-OTHER000", false},
		{"another payment's internal_ref", "MV-OURS", "SERVICE-OTHER000", "MV-OURS", false},
		{"push answer lost: moov's referenceid", "", "SERVICE-X0000001", "72024103000000009", true},
		{"push answer lost: another payment", "", "SERVICE-OTHER000", "72024103000000009", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, _ := serveFake(t, func(w http.ResponseWriter, op string) {
				w.Write(encodeAnswer(op, answer{Status: "0", TransID: c.transid, ReferenceID: c.refid}))
			})
			p := payment(b, "+23566000001")
			p.Ref, p.OperatorRef = "SERVICE-X0000001", c.operatorRef
			o, err := b.op.PaymentStatus(context.Background(), p)
			if c.believed != (err == nil) || (err == nil && o.State != operator.Succeeded) {
				t.Fatalf("got %+v, %v; believed: %v", o, err, c.believed)
			}
		})
	}
}

// TestPushAnswerWithMoovsOwnTransid: the SDKs' push answers carry an id of
// Moov's own as transid ("pi_…"), not our externaldata1: the push is taken
// and its referenceid kept.
func TestPushAnswerWithMoovsOwnTransid(t *testing.T) {
	t.Parallel()
	b, _ := serveFake(t, func(w http.ResponseWriter, op string) {
		w.Write(encodeAnswer(op, answer{Status: "100", Description: "PENDING", ReferenceID: "72024103000000009", TransID: "pi_NyM_1642619082990"}))
	})
	ref, err := b.op.RequestPayment(context.Background(), payment(b, "+23566000001"))
	if err != nil || ref != "72024103000000009" {
		t.Fatalf("got %q, %v; want the push taken with its referenceid", ref, err)
	}
}

// TestFaultQuotingTheTokenIsLoggedWithout: a fault that quotes our request
// back (token included) is logged and returned without the token.
func TestFaultQuotingTheTokenIsLoggedWithout(t *testing.T) {
	t.Parallel()
	var b bundle
	b, _ = serveFake(t, func(w http.ResponseWriter, op string) {
		env, _ := encodeRequest(op, statusRequest{Token: b.token, TransID: "SERVICE-X"})
		w.WriteHeader(500)
		w.Write(encodeFault("soap:Client", "Invalid request: "+string(env)))
	})
	p := payment(b, "+23566000001")
	_, perr := b.op.RequestPayment(context.Background(), p)
	_, serr := b.op.PaymentStatus(context.Background(), p)
	for _, err := range []error{perr, serr} {
		if err == nil || strings.Contains(err.Error(), b.token) || !strings.Contains(err.Error(), "[token]") {
			t.Errorf("error %v: want a fault without the token", err)
		}
	}
	if strings.Contains(b.logs.String(), b.token) {
		t.Errorf("the log holds the token:\n%s", b.logs)
	}
}

// TestDeepAnswerIsCheap: an answer nested as deeply as 64 KiB allows is
// refused without encoding/xml's per-element record (about 30 MB for a
// megabyte of "<a>").
func TestDeepAnswerIsCheap(t *testing.T) {
	deep := []byte("<soap:Envelope><soap:Body>" + strings.Repeat("<a>", maxAnswer/3))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := decodeAnswer(deep, opStatus)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errMalformed) {
		t.Fatalf("got %v, want errMalformed", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("reading it allocated %d bytes, want under 1 MiB", n)
	}
}

// TestConnectionRefused: a push that could not even connect was certainly
// not taken.
func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := setup(t, "http://"+addr+"/")
	_, err = b.op.RequestPayment(context.Background(), payment(b, "+23566000001"))
	if !errors.Is(err, operator.ErrUnavailable) {
		t.Fatalf("got %v; want unavailable", err)
	}
}

// TestBusyBackoff: enquiries answered busy back off, doubling, without
// asking Moov meanwhile; an ordinary answer ends the back-off.
func TestBusyBackoff(t *testing.T) {
	t.Parallel()
	var code atomic.Value
	code.Store("99")
	b, f := serveFake(t, func(w http.ResponseWriter, op string) {
		w.Write(encodeAnswer(op, answer{Status: code.Load().(string)}))
	})
	ctx := context.Background()
	p := payment(b, "+23566000001")
	retry := func() time.Duration {
		t.Helper()
		_, err := b.op.PaymentStatus(ctx, p)
		be, ok := errors.AsType[*BusyError](err)
		if !ok {
			t.Fatalf("got %v; want BusyError", err)
		}
		return be.RetryAfter
	}
	if got := retry(); got != BusyBackoffMin {
		t.Fatalf("first back-off %s", got)
	}
	b.clock.Advance(time.Second)
	if got := retry(); got != time.Second || f.calls.Load() != 1 {
		t.Fatalf("during the back-off: %s, %d calls", got, f.calls.Load())
	}
	b.clock.Advance(time.Second)
	if got := retry(); got != 2*BusyBackoffMin || f.calls.Load() != 2 {
		t.Fatalf("second back-off %s, %d calls", got, f.calls.Load())
	}
	for range 10 {
		b.clock.Advance(BusyBackoffMax)
		retry()
	}
	if got := retry(); got > BusyBackoffMax {
		t.Fatalf("back-off %s above its maximum", got)
	}
	code.Store("100")
	b.clock.Advance(BusyBackoffMax)
	if o, err := b.op.PaymentStatus(ctx, p); err != nil || o.State != operator.Pending {
		t.Fatalf("after the back-off: %+v, %v", o, err)
	}
	code.Store("-1")
	if got := retry(); got != BusyBackoffMin {
		t.Fatalf("back-off after a normal answer starts at %s", got)
	}
}

// TestEnquiryUsesReferenceID: the push returns the referenceid Moov gave,
// and getTransactionStatus names the payment by it when it is passed back
// (kept with the transaction, so a fresh adapter, another instance's or
// one restarted, asks the same way), or by our internal_ref when the
// push's answer was lost.
func TestEnquiryUsesReferenceID(t *testing.T) {
	t.Parallel()
	var seen []string
	var mu sync.Mutex
	f := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := decodeRequest(body)
		mu.Lock()
		seen = append(seen, req.Op+" "+req.Status.TransID+" "+req.Status.Token+req.Push.Token)
		mu.Unlock()
		w.Write(encodeAnswer(req.Op, answer{Status: "100", ReferenceID: "72024103000000009"}))
	})
	srv := httptest.NewServer(f)
	defer srv.Close()
	b := setup(t, srv.URL)
	ctx := context.Background()
	pushed, lost := payment(b, "+23566000001"), payment(b, "+23566000002")
	ref, err := b.op.RequestPayment(ctx, pushed)
	if err != nil || ref != "72024103000000009" {
		t.Fatalf("push: %q, %v; want the referenceid", ref, err)
	}
	pushed.OperatorRef = ref
	fresh := setup(t, srv.URL) // no memory of the push
	fresh.op.PaymentStatus(ctx, pushed)
	b.op.PaymentStatus(ctx, lost)
	want := []string{
		"PushWithPending  " + b.token,
		"getTransactionStatus 72024103000000009 " + fresh.token,
		"getTransactionStatus " + lost.Ref + " " + b.token,
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("got %q\nwant %q", seen, want)
	}
}

// TestLogsHoldNoSecret: every call is logged with its operation, latency
// and codes, never the token nor what it is made of.
func TestLogsHoldNoSecret(t *testing.T) {
	t.Parallel()
	b, _ := withSimulator(t)
	ctx := context.Background()
	p := payment(b, PhoneSuccess)
	b.op.RequestPayment(ctx, p)
	b.op.PaymentStatus(ctx, p)
	logs := b.logs.String()
	for _, secret := range []string{b.token, testPassword, testKey} {
		if strings.Contains(logs, secret) {
			t.Errorf("log holds a secret %q:\n%s", secret, logs)
		}
	}
	for _, want := range []string{"operation=PushWithPending", "operation=getTransactionStatus",
		"internal_ref=" + p.Ref, "transaction_id=" + p.TransactionID, "latency_ms=", "http_status=200", "moov_status=100"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestNextPoll: enquiries only, the first FirstPollDelay after the push.
func TestNextPoll(t *testing.T) {
	t.Parallel()
	var o Operator
	for _, tc := range []struct{ age, want time.Duration }{
		{0, FirstPollDelay}, {time.Second, FirstPollDelay - time.Second}, {FirstPollDelay, 3 * time.Second},
		{29 * time.Second, 3 * time.Second}, {time.Minute, 10 * time.Second}, {4 * time.Minute, 30 * time.Second},
	} {
		if got := o.NextPoll(tc.age); got != tc.want {
			t.Errorf("NextPoll(%s) = %s, want %s", tc.age, got, tc.want)
		}
	}
}
