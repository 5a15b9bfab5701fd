package payment

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/operator"
)

// Store persists transactions. Implementations must make CreateTransaction
// and Settle atomic together with the background work they cause (status
// polls, expiry checks, webhook deliveries), so that nothing is lost when a
// process dies between two steps.
type Store interface {
	// CreateTransaction inserts t and schedules its polls and expiry check.
	// A reference the merchant already used gives an *Error EDUPLICATE
	// carrying the existing transaction's id; an internal_ref collision
	// gives ErrInternalRefTaken.
	CreateTransaction(ctx context.Context, t *Transaction) error
	// DeleteTransaction removes a transaction the operator never took.
	DeleteTransaction(ctx context.Context, merchantID, id string) error
	// Transaction returns the merchant's transaction or ErrNotFound.
	Transaction(ctx context.Context, merchantID, id string) (*Transaction, error)
	// TransactionByInternalRef finds a transaction for an operator callback,
	// which knows only our internal_ref.
	TransactionByInternalRef(ctx context.Context, ref string) (*Transaction, error)
	// ListTransactions returns one page, newest first, with the true total.
	ListTransactions(ctx context.Context, merchantID string, f ListFilter) (*Page, error)
	// Settle moves a PENDING transaction to a final state with one
	// conditional update, and queues its webhook deliveries in the same
	// database transaction. When the transaction is already final and the
	// outcome differs, it records a ReconciliationCase instead. It reports
	// whether this call made the transition.
	Settle(ctx context.Context, s Settlement) (*Transaction, bool, error)
}

// ErrInternalRefTaken reports an internal_ref collision; Initiate draws again.
var ErrInternalRefTaken = errors.New("internal_ref already taken")

// Settlement is one attempt to finalise a transaction.
type Settlement struct {
	MerchantID    string
	TransactionID string
	To            Status
	At            time.Time
	// Source says who reported the outcome (callback, poll, expiry, sandbox)
	// and Detail what the operator said, for reconciliation.
	Source string
	Detail string
	// Reconcile asks for a ReconciliationCase when the transaction is
	// already final with another status.
	Reconcile bool
}

// Service initiates payments and drives them to a final state.
type Service struct {
	store      Store
	operators  map[Operator]operator.Operator
	now        func() time.Time
	pendingTTL time.Duration
	log        *slog.Logger
}

// NewService builds a Service. now is injected so tests control time;
// pendingTTL is how long a transaction may stay PENDING (5 minutes in live
// mode, shorter in sandbox demos).
func NewService(store Store, operators map[Operator]operator.Operator, now func() time.Time, pendingTTL time.Duration, log *slog.Logger) *Service {
	if pendingTTL <= 0 {
		pendingTTL = DefaultPendingTTL
	}
	return &Service{store: store, operators: operators, now: now, pendingTTL: pendingTTL, log: log}
}

// pushTimeout bounds one push to an operator; past it the answer is
// ambiguous and polling settles the transaction.
const pushTimeout = 15 * time.Second

// Initiate validates req, records a PENDING transaction and sends the push.
//
// Errors: EINVALID, EUNPROCESSABLE, EDUPLICATE (with the existing id),
// EUNAVAILABLE when the operator certainly did not take the push (nothing is
// kept, so the same reference can be retried).
func (s *Service) Initiate(ctx context.Context, merchantID string, req CreateRequest) (*Transaction, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	t := &Transaction{
		ID:          uuid.Must(uuid.NewV7()).String(),
		MerchantID:  merchantID,
		Reference:   req.Reference,
		Amount:      req.Amount,
		Currency:    Currency,
		Operator:    Operator(req.Operator),
		PhoneNumber: req.PhoneNumber,
		Description: req.Description,
		Status:      StatusPending,
		CreatedAt:   now,
		UpdatedAt:   now,
		ExpiresAt:   now.Add(s.pendingTTL),
	}
	if err := s.insert(ctx, t); err != nil {
		return nil, err
	}

	// The push must not be cut short by the merchant hanging up: once the
	// row exists, the payer may be asked to pay whatever the caller does.
	pushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushTimeout)
	defer cancel()
	err := s.operators[t.Operator].RequestPayment(pushCtx, operatorPayment(t))
	if ue, ok := errors.AsType[*operator.UnavailableError](err); ok {
		if derr := s.store.DeleteTransaction(context.WithoutCancel(ctx), merchantID, t.ID); derr != nil {
			return nil, fmt.Errorf("forget refused transaction %s: %w", t.ID, derr)
		}
		retry := max(ue.RetryAfter, time.Second)
		return nil, &Error{Code: EUNAVAILABLE, Message: fmt.Sprintf("%s is temporarily unavailable; retry later", t.Operator), RetryAfter: retry}
	}
	if err != nil {
		// Ambiguous: the push may have reached the payer. Keep the
		// transaction PENDING; polling and the expiry check settle it.
		s.log.Warn("ambiguous push answer; polling will settle", "transaction_id", t.ID, "operator", t.Operator, "err", err)
	}
	return t, nil
}

// insert stores t, drawing a new internal_ref on the rare collision.
func (s *Service) insert(ctx context.Context, t *Transaction) error {
	for range 5 {
		t.InternalRef = newInternalRef()
		err := s.store.CreateTransaction(ctx, t)
		if !errors.Is(err, ErrInternalRefTaken) {
			return err
		}
	}
	return errors.New("could not draw a unique internal_ref")
}

const internalRefAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newInternalRef returns SERVICE- and 8 random upper-case alphanumerics,
// drawn without modulo bias.
func newInternalRef() string {
	out := make([]byte, 0, 8)
	buf := make([]byte, 16)
	for len(out) < 8 {
		rand.Read(buf)
		for _, b := range buf {
			if b < 252 && len(out) < 8 { // 252 = 7*36
				out = append(out, internalRefAlphabet[int(b)%len(internalRefAlphabet)])
			}
		}
	}
	return "SERVICE-" + string(out)
}

// Get returns one of the merchant's transactions, or ENOTFOUND.
func (s *Service) Get(ctx context.Context, merchantID, id string) (*Transaction, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, ErrNotFound
	}
	return s.store.Transaction(ctx, merchantID, id)
}

// List returns a page of the merchant's transactions; EINVALID for bad filters.
func (s *Service) List(ctx context.Context, merchantID string, f ListFilter) (*Page, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return s.store.ListTransactions(ctx, merchantID, f)
}

func operatorPayment(t *Transaction) operator.Payment {
	p := operator.Payment{Ref: t.InternalRef, Amount: t.Amount, PhoneNumber: t.PhoneNumber, RequestedAt: t.CreatedAt}
	if t.Description != nil {
		p.Description = *t.Description
	}
	return p
}
