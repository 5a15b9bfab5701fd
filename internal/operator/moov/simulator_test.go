package moov

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator"
)

// TestSimulatorPayerNumbers walks every sandbox payer number through the
// adapter and the simulator: the push, the status before the payer
// answers, and after.
func TestSimulatorPayerNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		phone  string
		want   operator.State
		detail string
	}{
		{PhoneSuccess, operator.Succeeded, "moov 0: completed"},
		{PhoneLostCallback, operator.Succeeded, "moov 0: completed"},
		{PhoneFailure, operator.Failed, "moov 10: insufficient funds"},
		{PhoneExpired, operator.Expired, "moov 92: push timed out or cancelled"},
		{PhoneNoAnswer, operator.Pending, "moov 100: pending"},
		{"+23566123456", operator.Pending, "moov 100: pending"},
	} {
		t.Run(tc.phone, func(t *testing.T) {
			t.Parallel()
			b, _ := withSimulator(t)
			ctx := context.Background()
			p := payment(b, tc.phone)
			if _, err := b.op.RequestPayment(ctx, p); err != nil {
				t.Fatalf("push: %v", err)
			}
			o, err := b.op.PaymentStatus(ctx, p)
			if err != nil || o.State != operator.Pending {
				t.Fatalf("before the payer answers: %+v, %v", o, err)
			}
			b.clock.Advance(AnswerDelay)
			o, err = b.op.PaymentStatus(ctx, p)
			if err != nil || o.State != tc.want || !strings.HasPrefix(o.Detail, tc.detail) {
				t.Fatalf("got %+v, %v; want %s %q", o, err, tc.want, tc.detail)
			}
		})
	}
	t.Run("unavailable", func(t *testing.T) {
		t.Parallel()
		b, _ := withSimulator(t)
		_, err := b.op.RequestPayment(context.Background(), payment(b, PhoneUnavailable))
		ue, ok := errors.AsType[*operator.UnavailableError](err)
		if !ok || ue.RetryAfter != BusyRetryAfter {
			t.Fatalf("got %v, want UnavailableError with retry after %s", err, BusyRetryAfter)
		}
	})
}

// TestSimulatorOtherRefs: a push whose externaldata1 is not one of our
// internal_refs (its referenceid cannot be read back into it) is still
// found by the referenceid it was given, and by its externaldata1.
func TestSimulatorOtherRefs(t *testing.T) {
	t.Parallel()
	b, _ := withSimulator(t)
	ctx := context.Background()
	p := payment(b, PhoneSuccess)
	p.Ref = "order-1001"
	ref, err := b.op.RequestPayment(ctx, p)
	if err != nil || ref == "" || refOf(ref) != "" {
		t.Fatalf("push: %q, %v", ref, err)
	}
	b.clock.Advance(AnswerDelay)
	byRef := p
	byRef.OperatorRef = ref
	for _, q := range []operator.Payment{byRef, p} {
		if o, err := b.op.PaymentStatus(ctx, q); err != nil || o.State != operator.Succeeded {
			t.Fatalf("asked by %q: %+v, %v", cmp.Or(q.OperatorRef, q.Ref), o, err)
		}
	}
}

// TestSimulatorAnswerByHand plays the payer: an unscripted number waits
// for the answer; an answer by hand wins over a script.
func TestSimulatorAnswerByHand(t *testing.T) {
	t.Parallel()
	b, sim := withSimulator(t)
	ctx := context.Background()
	yes, no, scripted := payment(b, "+23566000001"), payment(b, "+23566000002"), payment(b, PhoneSuccess)
	for _, p := range []operator.Payment{yes, no, scripted} {
		if _, err := b.op.RequestPayment(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if o, err := b.op.PaymentStatus(ctx, yes); err != nil || o.State != operator.Pending {
		t.Fatalf("before the answer: %+v, %v", o, err)
	}
	for _, a := range []struct {
		p       operator.Payment
		approve bool
	}{{yes, true}, {no, false}, {scripted, false}} {
		if err := sim.AnswerPayment(ctx, a.p.Ref, a.approve); err != nil {
			t.Fatal(err)
		}
	}
	if o, err := b.op.PaymentStatus(ctx, yes); err != nil || o.State != operator.Succeeded || o.Code != "0" {
		t.Errorf("approved: %+v, %v", o, err)
	}
	for _, p := range []operator.Payment{no, scripted} {
		o, err := b.op.PaymentStatus(ctx, p)
		if err != nil || o.State != operator.Failed || o.Detail != "moov 95: transaction failed (TRANSACTION_FAILED)" {
			t.Errorf("refused: %+v, %v", o, err)
		}
	}
	if err := sim.AnswerPayment(ctx, "SERVICE-NOTKNOWN", true); !errors.Is(err, ErrNoSuchPush) {
		t.Errorf("unknown ref: %v", err)
	}
}

// ledger is a Ledger shared by simulators, as the database is by the
// processes of one sandbox.
type ledger struct {
	mu      sync.Mutex
	records map[string]Record
}

func (l *ledger) Payment(_ context.Context, ref string) (Record, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[ref]
	return r, ok, nil
}

func (l *ledger) Answer(_ context.Context, ref string, approve bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.records[ref]
	r.Answered, r.Approved = true, approve
	l.records[ref] = r
	return nil
}

// TestSimulatorLedger: with a ledger, a payment pushed by one process (or
// before a restart) is answered by another, by our internal_ref, and an
// answer by hand given in one process is seen by all.
func TestSimulatorLedger(t *testing.T) {
	t.Parallel()
	c := &clock{now: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}
	token, _ := Token(testUser, testPassword, testKey)
	l := &ledger{records: map[string]Record{}}
	process := func() (bundle, *Simulator) {
		sim := NewSimulator(SimulatorConfig{Token: token, Ledger: l, Now: c.Now})
		srv := httptest.NewServer(sim)
		t.Cleanup(srv.Close)
		b := setup(t, srv.URL)
		b.op.now, b.clock = c.Now, c
		return b, sim
	}
	a, _ := process()
	ctx := context.Background()
	scripted, byHand := payment(a, PhoneSuccess), payment(a, "+23566000009")
	for _, p := range []operator.Payment{scripted, byHand} {
		// momopay writes the transaction before the push.
		l.records[p.Ref] = Record{Ref: p.Ref, PhoneNumber: p.PhoneNumber, Amount: p.Amount, RequestedAt: p.RequestedAt}
		if _, err := a.op.RequestPayment(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	b, simB := process()
	c.Advance(AnswerDelay)
	// Asked by our internal_ref (b never saw the push's answer), answered
	// with the referenceid a gave.
	if o, err := b.op.PaymentStatus(ctx, scripted); err != nil || o.State != operator.Succeeded || o.OperatorRef != referenceID(scripted.Ref) {
		t.Fatalf("scripted, asked elsewhere: %+v, %v", o, err)
	}
	if err := simB.AnswerPayment(ctx, byHand.Ref, true); err != nil {
		t.Fatal(err)
	}
	if o, err := a.op.PaymentStatus(ctx, byHand); err != nil || o.State != operator.Succeeded {
		t.Fatalf("answered elsewhere: %+v, %v", o, err)
	}
}

// TestSimulatorRefusesBadToken: wrong credentials are answered 98; the
// adapter refuses the push as unavailable and raises an alert.
func TestSimulatorRefusesBadToken(t *testing.T) {
	t.Parallel()
	b, _ := withSimulator(t)
	b.op.token = "forged"
	_, err := b.op.RequestPayment(context.Background(), payment(b, PhoneSuccess))
	ue, ok := errors.AsType[*operator.UnavailableError](err)
	if !ok || ue.RetryAfter != ConfigRetryAfter {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(b.logs.String(), "ALERT") {
		t.Errorf("no alert logged:\n%s", b.logs)
	}
}

// TestDroppedPushSettlesByPolling: Moov takes the push but the connection
// drops before its answer arrives. The push is ambiguous (not unavailable),
// and the enquiries, by our internal_ref since no referenceid came back,
// settle the payment.
func TestDroppedPushSettlesByPolling(t *testing.T) {
	t.Parallel()
	c := &clock{now: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}
	token, _ := Token(testUser, testPassword, testKey)
	sim := NewSimulator(SimulatorConfig{Token: token, Now: c.Now})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
		if bytes.Contains(body, []byte(opPushWithPending)) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Write(rec.Body.Bytes())
	}))
	defer srv.Close()
	b := setup(t, srv.URL)
	b.op.now, b.clock = c.Now, c
	ctx := context.Background()
	p := payment(b, PhoneSuccess)
	if _, err := b.op.RequestPayment(ctx, p); err == nil || errors.Is(err, operator.ErrUnavailable) {
		t.Fatalf("push: %v; want an ambiguous error", err)
	}
	if o, err := b.op.PaymentStatus(ctx, p); err != nil || o.State != operator.Pending {
		t.Fatalf("first poll: %+v, %v", o, err)
	}
	c.Advance(AnswerDelay)
	if o, err := b.op.PaymentStatus(ctx, p); err != nil || o.State != operator.Succeeded {
		t.Fatalf("later poll: %+v, %v", o, err)
	}
}

// TestReferenceIDFindsThePayment: the referenceid the simulator answers a
// push with names the internal_ref, so a process that did not see the push
// (the CLI playing the payer) finds the payment by it.
func TestReferenceIDFindsThePayment(t *testing.T) {
	for _, ref := range []string{"SERVICE-00000000", "SERVICE-ZZZZZZZZ", "SERVICE-IQ8106WQ"} {
		if got := refOf(referenceID(ref)); got != ref {
			t.Errorf("refOf(referenceID(%q)) = %q", ref, got)
		}
	}
	for _, other := range []string{"order-1", "SERVICE-lower123", "SERVICE-TOOLONG99"} {
		if id := referenceID(other); refOf(id) == other {
			t.Errorf("%q encoded as %s, want a hash", other, id)
		}
	}
	for _, id := range []string{"x", "79999999999999999", "7000000000000001x", "80000000000000001"} {
		if got := refOf(id); got != "" {
			t.Errorf("refOf(%q) = %q, want none", id, got)
		}
	}
}
