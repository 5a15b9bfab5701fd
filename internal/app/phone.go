package app

import (
	"context"
	"regexp"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// sandboxPhone plays the payer's phone for the dashboard's sandbox page: it
// lists the payment requests waiting on a number and answers one. It is
// kept to the two calls the page needs so that it can be pointed at the
// operator simulators' own payer when they have one.
type sandboxPhone struct {
	txs interface {
		PendingForPayer(ctx context.Context, merchantID, phone string) ([]payment.Transaction, error)
	}
	payments *payment.Service
	// answer is App.AnswerSandboxPayment: the operator's simulator takes
	// the payer's answer, as a real phone's would reach the operator.
	answer func(ctx context.Context, merchantID, txID string, approve bool) (*payment.Transaction, bool, error)
	// answers records the first answer to a request (Claim).
	answers *store.SandboxAnswers
	now     func() time.Time
}

// pinPattern is what the simulated phone takes as a PIN: four digits, any.
var pinPattern = regexp.MustCompile(`^[0-9]{4}$`)

// Pending implements dashboard.Phone.
func (p *sandboxPhone) Pending(ctx context.Context, merchantID, phone string) ([]payment.Transaction, error) {
	return p.txs.PendingForPayer(ctx, merchantID, phone)
}

// Answer implements dashboard.Phone: the payer confirms with a PIN (four
// digits) or refuses. The answer goes to the operator's simulator, which
// reports it as the real operator would (Airtel's callback, Moov's status
// enquiry), so webhooks, the timeline and reconciliation behave exactly as
// for a real answer. Only a PENDING request to phone can be answered;
// anything else is not found.
func (p *sandboxPhone) Answer(ctx context.Context, merchantID, phone, transactionID string, confirm bool, pin string) (*payment.Transaction, error) {
	if confirm && !pinPattern.MatchString(pin) {
		return nil, &payment.Error{Code: payment.EINVALID, Message: "the PIN is invalid", Fields: map[string]string{"pin": "four digits"}}
	}
	t, err := p.payments.Get(ctx, merchantID, transactionID)
	if err != nil {
		return nil, err
	}
	if t.PhoneNumber != phone || t.Status != payment.StatusPending {
		return nil, payment.ErrNotFound
	}
	// A phone answers a request once. Two people answering it at once
	// both saw it PENDING: the second answer would reach the operator
	// after the first and be kept as a contradicting late report, a
	// reconciliation case for nothing.
	if first, err := p.answers.Claim(ctx, t.InternalRef, confirm, p.now()); err != nil {
		return nil, err
	} else if !first {
		return nil, payment.ErrNotFound
	}
	t, _, err = p.answer(ctx, merchantID, transactionID, confirm)
	return t, err
}
