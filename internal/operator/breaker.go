package operator

import (
	"context"
	"errors"
	"time"

	"github.com/sony/gobreaker/v2"
)

// BreakerSettings tunes WithBreaker.
type BreakerSettings struct {
	// Failures in a row that open the circuit.
	Failures uint32
	// OpenFor is how long the circuit stays open before one trial request;
	// it is also the retry_after given to merchants meanwhile.
	OpenFor time.Duration
}

// DefaultBreakerSettings open after 5 failed pushes in a row, for 30 s.
var DefaultBreakerSettings = BreakerSettings{Failures: 5, OpenFor: 30 * time.Second}

// WithBreaker wraps op in a circuit breaker on its pushes, so a failing
// operator is not hammered and merchants get 503 with retry_after at once.
// Status enquiries pass through: they must keep settling payments already
// taken, and a failed enquiry is simply asked again later.
func WithBreaker(name string, op Operator, s BreakerSettings) Operator {
	cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     s.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= s.Failures },
	})
	return &breaker{op: op, cb: cb, openFor: s.OpenFor}
}

type breaker struct {
	op      Operator
	cb      *gobreaker.CircuitBreaker[struct{}]
	openFor time.Duration
}

func (b *breaker) RequestPayment(ctx context.Context, p Payment) error {
	_, err := b.cb.Execute(func() (struct{}, error) { return struct{}{}, b.op.RequestPayment(ctx, p) })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return &UnavailableError{RetryAfter: b.openFor, Cause: err}
	}
	return err
}

func (b *breaker) PaymentStatus(ctx context.Context, p Payment) (Outcome, error) {
	return b.op.PaymentStatus(ctx, p)
}
