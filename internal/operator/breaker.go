package operator

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// BreakerSettings tunes WithBreaker.
type BreakerSettings struct {
	// Failures in a row that open the circuit.
	Failures int
	// OpenFor is how long the circuit stays open before one trial request;
	// it is also the retry_after given to merchants meanwhile.
	OpenFor time.Duration
	// PerMerchant keeps one circuit per merchant instead of one per
	// operator. The sandbox needs it: its outages are simulated by one
	// merchant's test number and must not refuse other merchants' pushes.
	// A real operator's outage is the same for everyone, so live mode keeps
	// one circuit per operator.
	PerMerchant bool
	// Now is the clock (time.Now when nil), injected so tests can let an
	// open circuit close without waiting 30 s.
	Now func() time.Time
}

// DefaultBreakerSettings open after 5 failed pushes in a row, for 30 s.
var DefaultBreakerSettings = BreakerSettings{Failures: 5, OpenFor: 30 * time.Second}

// CircuitOpenError is the cause of the UnavailableError a push gets while
// its circuit is open, so that the merchant can be told why it was refused
// without the operator being asked.
type CircuitOpenError struct {
	Operator string
	// OpenFor is how long the circuit stays open after the last failure.
	OpenFor time.Duration
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("circuit breaker of %s open for %s after repeated failures", e.Operator, e.OpenFor)
}

// WithBreaker wraps op in a circuit breaker on its pushes, so a failing
// operator is not hammered and merchants get 503 with retry_after at once.
// Status enquiries pass through: they must keep settling payments already
// taken, and a failed enquiry is simply asked again later.
func WithBreaker(name string, op Operator, s BreakerSettings) Operator {
	if s.Now == nil {
		s.Now = time.Now
	}
	return &breaker{name: name, op: op, s: s, circuits: map[string]*circuit{}}
}

type breaker struct {
	name string
	op   Operator
	s    BreakerSettings

	mu       sync.Mutex
	circuits map[string]*circuit // by merchant id, or "" for everyone
}

// circuit is closed while openUntil is zero; open until openUntil; then
// half-open: one trial push decides whether it closes or opens again.
type circuit struct {
	failures  int
	openUntil time.Time
	trial     bool
}

func (b *breaker) RequestPayment(ctx context.Context, p Payment) error {
	key := ""
	if b.s.PerMerchant {
		key = p.MerchantID
	}
	if err := b.admit(key); err != nil {
		return err
	}
	err := b.op.RequestPayment(ctx, p)
	b.record(key, err == nil)
	return err
}

// admit refuses a push while its circuit is open or while the one trial
// push of a half-open circuit is under way.
func (b *breaker) admit(key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.circuits[key]
	if c == nil || c.openUntil.IsZero() {
		return nil
	}
	now := b.s.Now()
	if now.Before(c.openUntil) {
		return b.refusal(c.openUntil.Sub(now))
	}
	if c.trial {
		return b.refusal(time.Second)
	}
	c.trial = true
	return nil
}

func (b *breaker) refusal(wait time.Duration) error {
	return &UnavailableError{
		// Whole seconds, rounded up: the merchant is told seconds.
		RetryAfter: (wait + time.Second - 1).Truncate(time.Second),
		Cause:      &CircuitOpenError{Operator: b.name, OpenFor: b.s.OpenFor},
	}
}

// record counts a push's result. Any error counts as a failure, ambiguous
// ones included: an operator that times out is as unhealthy as one that
// refuses.
func (b *breaker) record(key string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.circuits[key]
	if ok {
		// A healthy circuit needs no entry: keeps the per-merchant map small.
		delete(b.circuits, key)
		return
	}
	if c == nil {
		c = &circuit{}
		b.circuits[key] = c
	}
	c.failures++
	if c.trial || c.failures >= b.s.Failures {
		c.openUntil, c.trial = b.s.Now().Add(b.s.OpenFor), false
	}
}

func (b *breaker) PaymentStatus(ctx context.Context, p Payment) (Outcome, error) {
	return b.op.PaymentStatus(ctx, p)
}
