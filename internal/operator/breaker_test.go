package operator_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator"
)

// refusing is a fake operator that refuses the pushes of the merchants in
// down and counts the pushes that reach it.
type refusing struct {
	mu      sync.Mutex
	down    map[string]bool
	reached int
}

func (o *refusing) RequestPayment(_ context.Context, p operator.Payment) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reached++
	if o.down[p.MerchantID] {
		return "", &operator.UnavailableError{RetryAfter: 2 * time.Second}
	}
	return "", nil
}

func (o *refusing) PaymentStatus(context.Context, operator.Payment) (operator.Outcome, error) {
	return operator.Outcome{State: operator.Pending}, nil
}

// TestBreaker runs on the real clock (gobreaker has no other) with
// circuits open for 2 s, so the time-left and trial-push cases take about
// 4 s in all.
func TestBreaker(t *testing.T) {
	t.Parallel()
	const openFor = 2 * time.Second
	push := func(op operator.Operator, merchant string) error {
		_, err := op.RequestPayment(t.Context(), operator.Payment{Ref: "SERVICE-TEST0001", MerchantID: merchant})
		return err
	}
	circuitOpen := func(err error) *operator.CircuitOpenError {
		co, _ := errors.AsType[*operator.CircuitOpenError](err)
		return co
	}

	t.Run("per merchant", func(t *testing.T) {
		t.Parallel()
		fake := &refusing{down: map[string]bool{"x": true}}
		op := operator.WithBreaker("AIRTEL", fake, operator.BreakerSettings{Failures: 5, OpenFor: openFor, PerMerchant: true})
		for i := range 5 {
			if err := push(op, "x"); circuitOpen(err) != nil || !errors.Is(err, operator.ErrUnavailable) {
				t.Fatalf("push %d: %v, want the operator's own refusal", i, err)
			}
		}
		err := push(op, "x")
		ue, _ := errors.AsType[*operator.UnavailableError](err)
		if co := circuitOpen(err); co == nil || co.Operator != "AIRTEL" || co.OpenFor != openFor || ue.RetryAfter != openFor {
			t.Fatalf("6th push: %v", err)
		}
		if fake.count() != 5 {
			t.Errorf("%d pushes reached the operator, want 5", fake.count())
		}
		if err := push(op, "y"); err != nil {
			t.Errorf("another merchant while x's circuit is open: %v", err)
		}

		// retry_after is the time left, in whole seconds rounded up.
		time.Sleep(1100 * time.Millisecond)
		if ue, _ := errors.AsType[*operator.UnavailableError](push(op, "x")); ue == nil || ue.RetryAfter != time.Second {
			t.Errorf("1.1 s later: %v", ue)
		}

		// Once open long enough, one trial: it fails, the circuit opens again.
		time.Sleep(openFor)
		if err := push(op, "x"); circuitOpen(err) != nil {
			t.Fatalf("trial push refused by the breaker: %v", err)
		}
		if err := push(op, "x"); circuitOpen(err) == nil {
			t.Fatalf("after a failed trial: %v", err)
		}
		// The next trial succeeds and closes it.
		time.Sleep(openFor + 100*time.Millisecond)
		fake.set("x", false)
		for i := range 3 {
			if err := push(op, "x"); err != nil {
				t.Fatalf("push %d after the circuit closed: %v", i, err)
			}
		}
	})

	t.Run("one circuit for everyone in live mode", func(t *testing.T) {
		t.Parallel()
		fake := &refusing{down: map[string]bool{"x": true}}
		op := operator.WithBreaker("MOOV", fake, operator.BreakerSettings{Failures: 5, OpenFor: openFor})
		for range 5 {
			push(op, "x")
		}
		if err := push(op, "y"); circuitOpen(err) == nil {
			t.Errorf("another merchant while the operator's circuit is open: %v", err)
		}
	})
}

func (o *refusing) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reached
}

func (o *refusing) set(merchant string, down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down[merchant] = down
}
