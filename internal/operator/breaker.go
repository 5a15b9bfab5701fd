package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// BreakerSettings tunes WithBreaker.
type BreakerSettings struct {
	// Failures in a row that open the circuit.
	Failures uint32
	// OpenFor is how long the circuit stays open before one trial request;
	// the time it has left is the retry_after given to merchants meanwhile.
	OpenFor time.Duration
	// PerMerchant keeps one circuit per merchant instead of one per
	// operator. The sandbox needs it: its outages are simulated by one
	// merchant's test number and must not refuse other merchants' pushes.
	// A real operator's outage is the same for everyone, so live mode keeps
	// one circuit per operator.
	PerMerchant bool
}

// DefaultBreakerSettings open after 5 failed pushes in a row, for 30 s.
var DefaultBreakerSettings = BreakerSettings{Failures: 5, OpenFor: 30 * time.Second}

// CircuitOpenError is the cause of the UnavailableError a push gets while
// its circuit is open, so that the merchant can be told why it was refused
// without the operator being asked.
type CircuitOpenError struct {
	Operator string
	// OpenFor is how long the circuit stays open after it opened.
	OpenFor time.Duration
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("circuit breaker of %s open for %s after repeated failures", e.Operator, e.OpenFor)
}

// WithBreaker wraps op in a circuit breaker (gobreaker) on its pushes, so a
// failing operator is not hammered and merchants get 503 with retry_after
// at once. Status enquiries pass through: they must keep settling payments
// already taken, and a failed enquiry is simply asked again later.
func WithBreaker(name string, op Operator, s BreakerSettings) Operator {
	return &breaker{name: name, op: op, s: s, circuits: map[string]*circuit{}}
}

type breaker struct {
	name string
	op   Operator
	s    BreakerSettings

	mu       sync.Mutex
	circuits map[string]*circuit // by merchant id, or "" for everyone
}

// circuit is one gobreaker and the time it last opened, which gobreaker
// does not expose but retry_after needs.
type circuit struct {
	cb       *gobreaker.CircuitBreaker[string]
	openedAt time.Time // guarded by breaker.mu
}

func (b *breaker) circuit(key string) *circuit {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.circuits[key]
	if c == nil {
		c = &circuit{}
		c.cb = gobreaker.NewCircuitBreaker[string](gobreaker.Settings{
			Name:        b.name,
			MaxRequests: 1,
			Timeout:     b.s.OpenFor,
			// Any error counts, ambiguous ones included: an operator that
			// times out is as unhealthy as one that refuses.
			ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= b.s.Failures },
			// A declined payment is the payer's, not an outage.
			IsSuccessful: func(err error) bool {
				_, declined := errors.AsType[*DeclinedError](err)
				return err == nil || declined
			},
			OnStateChange: func(_ string, _, to gobreaker.State) {
				if to == gobreaker.StateOpen {
					b.mu.Lock()
					c.openedAt = time.Now()
					b.mu.Unlock()
				}
			},
		})
		b.circuits[key] = c
	}
	return c
}

func (b *breaker) RequestPayment(ctx context.Context, p Payment) (string, error) {
	key := ""
	if b.s.PerMerchant {
		key = p.MerchantID
	}
	c := b.circuit(key)
	ref, err := c.cb.Execute(func() (string, error) { return b.op.RequestPayment(ctx, p) })
	switch {
	case errors.Is(err, gobreaker.ErrOpenState):
		b.mu.Lock()
		left := b.s.OpenFor - time.Since(c.openedAt)
		b.mu.Unlock()
		return "", b.refusal(left)
	case errors.Is(err, gobreaker.ErrTooManyRequests):
		// Half-open: the one trial push is under way.
		return "", b.refusal(time.Second)
	case err == nil && b.s.PerMerchant && c.cb.State() == gobreaker.StateClosed:
		// A healthy merchant needs no circuit: keeps the map small. A
		// concurrent failure recorded on the dropped circuit is lost,
		// which only delays opening by one push.
		b.mu.Lock()
		if b.circuits[key] == c {
			delete(b.circuits, key)
		}
		b.mu.Unlock()
	}
	return ref, err
}

// refusal is the error of a push the breaker did not let through; wait is
// rounded up to whole seconds, at least one, as merchants are told seconds.
func (b *breaker) refusal(wait time.Duration) error {
	return &UnavailableError{
		RetryAfter: max((wait + time.Second - 1).Truncate(time.Second), time.Second),
		Cause:      &CircuitOpenError{Operator: b.name, OpenFor: b.s.OpenFor},
	}
}

func (b *breaker) PaymentStatus(ctx context.Context, p Payment) (Outcome, error) {
	return b.op.PaymentStatus(ctx, p)
}

// Unwrap implements Unwrapper: refunds, schedules and the sandbox payer of
// the operator inside pass the breaker by.
func (b *breaker) Unwrap() Operator { return b.op }
