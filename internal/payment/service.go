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
	// CreateTransaction inserts t, as Initiate makes it (the operator's
	// fields empty: PushTaken and Settle write them), and schedules its
	// polls and expiry check.
	// A reference the merchant already used gives an *Error EDUPLICATE
	// carrying the existing transaction's id; an internal_ref collision
	// gives ErrInternalRefTaken; a holder of the reference that vanished
	// while it was being read gives ErrReferenceReleased.
	CreateTransaction(ctx context.Context, t *Transaction) error
	// DeleteTransaction removes a PENDING transaction whose push is still
	// in flight, because the operator refused it. It reports false when
	// there was none (the push was meanwhile judged taken, or settled).
	DeleteTransaction(ctx context.Context, merchantID, id string) (bool, error)
	// PushTaken records that a transaction's push is no longer in flight,
	// with the operator's id of it when the push returned one (kept as
	// OperatorRef; "" keeps what is there), and adds step
	// (EventPushAccepted or EventPushUnconfirmed) to its timeline, all
	// only when the flag was still set (an id of no transaction of the
	// merchant's changes nothing).
	PushTaken(ctx context.Context, merchantID, id, operatorRef string, step TransactionEvent) error
	// Heard adds an answer that changed nothing (a status poll or callback
	// saying the payment is still pending) to the transaction's timeline.
	Heard(ctx context.Context, merchantID, id string, e TransactionEvent) error
	// Transaction returns the merchant's transaction or ErrNotFound.
	Transaction(ctx context.Context, merchantID, id string) (*Transaction, error)
	// ReferenceHolder returns the id of the merchant's transaction holding
	// reference (its push in flight or not), or ErrNotFound.
	ReferenceHolder(ctx context.Context, merchantID, reference string) (string, error)
	// TransactionByInternalRef finds a transaction for an operator callback,
	// which knows only our internal_ref.
	TransactionByInternalRef(ctx context.Context, ref string) (*Transaction, error)
	// ListTransactions returns one page, newest first, with the true total.
	ListTransactions(ctx context.Context, merchantID string, f ListFilter) (*Page, error)
	// Settle moves a PENDING transaction to a final state with one
	// conditional update (which never sets EXPIRED before expires_at: an
	// early EXPIRED changes nothing and reports false), and queues its webhook deliveries in the same
	// database transaction. When the transaction is already final and the
	// outcome differs, it records a ReconciliationCase instead. It reports
	// whether this call made the transition. An id of no transaction of
	// the merchant's is ErrNotFound and changes nothing.
	Settle(ctx context.Context, s Settlement) (*Transaction, bool, error)
}

// ErrInternalRefTaken reports an internal_ref collision; Initiate draws again.
var ErrInternalRefTaken = errors.New("internal_ref already taken")

// ErrReferenceReleased reports that the transaction holding a reference was
// deleted (its push refused) while a create with that reference was
// reading it; Initiate inserts again.
var ErrReferenceReleased = errors.New("the reference was released meanwhile")

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
	// OperatorRef, OperatorCode and FailureReason are what the operator's
	// outcome carried (operator.Outcome), kept with the transaction.
	OperatorRef   string
	OperatorCode  string
	FailureReason string
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
	refunds    RefundStore
	hints      *hints // bounds what unverified callbacks cost (hints.go)
}

// NewService builds a Service. now is injected so tests control time;
// pendingTTL is how long a transaction may stay PENDING (5 minutes in live
// mode, shorter in sandbox demos).
func NewService(store Store, operators map[Operator]operator.Operator, now func() time.Time, pendingTTL time.Duration, log *slog.Logger) *Service {
	if pendingTTL <= 0 {
		pendingTTL = DefaultPendingTTL
	}
	return &Service{store: store, operators: operators, now: now, pendingTTL: pendingTTL, log: log, hints: newHints()}
}

// pushTimeout bounds one push to an operator; past it the answer is
// ambiguous and polling settles the transaction.
const pushTimeout = 15 * time.Second

// Initiate validates req, records a PENDING transaction and sends the push.
//
// The row is committed before the push, so no push is ever sent for a
// payment we could lose, and marked push-in-flight until the operator took
// the push (or answered ambiguously); a refused push deletes it, and a push
// the operator declined for the payer's reason (operator.DeclinedError) is
// kept and settled FAILED at once. No database
// transaction stays open across the push: SQLite has one writer and
// PostgreSQL's pool is small. A concurrent create with the same reference
// that meets an in-flight row waits for its push (see awaitPush) instead of
// naming a transaction that may vanish.
//
// Errors: EINVALID, EUNPROCESSABLE, EDUPLICATE (with the id of a
// transaction that exists), EUNAVAILABLE when the operator certainly did not
// take the push (nothing is kept, so the same reference can be retried).
func (s *Service) Initiate(ctx context.Context, merchantID string, req CreateRequest) (*Transaction, error) {
	err := req.Validate()
	if err == nil && s.operators[Operator(req.Operator)] == nil {
		err = &Error{Code: EUNPROCESSABLE, Fields: map[string]string{"operator": "not available on this service"},
			Message: fmt.Sprintf("%s payments are not available on this service: its %s account is not configured", req.Operator, req.Operator)}
	}
	if err != nil {
		return nil, s.takenFirst(ctx, merchantID, req.Reference, err)
	}
	t := &Transaction{
		MerchantID:   merchantID,
		Reference:    req.Reference,
		Amount:       req.Amount,
		Currency:     Currency,
		Operator:     Operator(req.Operator),
		PhoneNumber:  req.PhoneNumber,
		Description:  req.Description,
		Status:       StatusPending,
		PushInFlight: true,
	}
	s.stamp(t)
	if err := s.claimReference(ctx, t); err != nil {
		return nil, err
	}

	// The push must not be cut short by the merchant hanging up: once the
	// row exists, the payer may be asked to pay whatever the caller does.
	bg := context.WithoutCancel(ctx)
	pushCtx, cancel := context.WithTimeout(bg, pushTimeout)
	defer cancel()
	operatorRef, err := s.operators[t.Operator].RequestPayment(pushCtx, operatorPayment(t))
	if ue, ok := errors.AsType[*operator.UnavailableError](err); ok {
		deleted, derr := s.store.DeleteTransaction(bg, merchantID, t.ID)
		if derr != nil {
			return nil, fmt.Errorf("forget refused transaction %s: %w", t.ID, derr)
		}
		if deleted {
			return nil, unavailable(t.Operator, ue)
		}
		// A duplicate or the poller judged this push taken (it outlived
		// pushTimeout and the margin), or an outcome settled it: the row
		// stays, so it is answered as kept.
		s.log.Warn("refused push kept: it was judged taken meanwhile", "transaction_id", t.ID)
		return s.store.Transaction(bg, merchantID, t.ID)
	}
	declined, _ := errors.AsType[*operator.DeclinedError](err)
	note := ""
	if err != nil && declined == nil {
		// Ambiguous: the push may have reached the payer. Keep the
		// transaction PENDING; polling and the expiry check settle it.
		s.log.Warn("ambiguous push answer; polling will settle", "transaction_id", t.ID, "operator", t.Operator, "err", err)
		note = "the operator's answer was ambiguous (" + err.Error() + "): status polls settle it"
	}
	if err := s.store.PushTaken(bg, merchantID, t.ID, operatorRef, s.pushStep(note)); err != nil {
		// The row is kept either way; duplicates and the poller treat it as
		// taken once pushTimeout and the margin have passed.
		s.log.Error("could not record the push as taken", "transaction_id", t.ID, "err", err)
	}
	t.PushInFlight, t.OperatorRef = false, operatorRef
	s.log.Info("payment requested", "transaction_id", t.ID, "merchant_id", merchantID, "operator", t.Operator)
	if declined != nil {
		// The payer's failure, answered to the push: the payment was
		// created PENDING (its 201 says so, as the contract has it) and
		// fails now, with its webhook. Should this write fail, the polls
		// ask the operator, who knows.
		if _, _, err := s.settle(bg, merchantID, t.ID, StatusFailed, SourcePush, declined.Outcome); err != nil {
			s.log.Error("could not settle a declined push; polling will", "transaction_id", t.ID, "err", err)
		}
	}
	return t, nil
}

// stamp gives a transaction about to be inserted its id and times: now,
// and its PENDING window from now. (The id is a UUIDv7, which carries its
// time too.)
func (s *Service) stamp(t *Transaction) {
	now := s.now().UTC().Truncate(time.Microsecond)
	t.ID = uuid.Must(uuid.NewV7()).String()
	t.CreatedAt, t.UpdatedAt, t.ExpiresAt = now, now, now.Add(s.pendingTTL)
}

// unavailable is the 503 for a push the operator certainly did not take.
func unavailable(op Operator, ue *operator.UnavailableError) *Error {
	retry := max(ue.RetryAfter, time.Second)
	secs := int((retry + time.Second - 1) / time.Second)
	msg := fmt.Sprintf("%s is temporarily unavailable; retry after %d seconds with the same reference", op, secs)
	if co, ok := errors.AsType[*operator.CircuitOpenError](ue); ok {
		msg = fmt.Sprintf("%s is temporarily unavailable: after repeated failures we stopped sending to it for %d s; retry after %d seconds with the same reference",
			op, int(co.OpenFor/time.Second), secs)
	}
	return &Error{Code: EUNAVAILABLE, Message: msg, RetryAfter: retry}
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

// Get returns one of the merchant's transactions, or ENOTFOUND. A
// transaction whose push is in flight is answered once the push is decided,
// so that an id once shown never turns into a 404 because its push was
// refused.
func (s *Service) Get(ctx context.Context, merchantID, id string) (*Transaction, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	return s.awaitPush(ctx, merchantID, id)
}

// List returns a page of the merchant's transactions; EINVALID for bad filters.
func (s *Service) List(ctx context.Context, merchantID string, f ListFilter) (*Page, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return s.store.ListTransactions(ctx, merchantID, f)
}

// takenFirst answers a create refused by validation with 409 when its
// reference is taken: the contract makes the reference alone the
// idempotency key, the other parameters ignored when comparing, so a retry
// whose body changed (or went wrong) still learns which transaction holds
// the reference. A reference that is itself invalid, or free, leaves the
// validation error as it is; so does one whose holder's push is refused
// meanwhile (the reference is free again).
func (s *Service) takenFirst(ctx context.Context, merchantID, reference string, invalid error) error {
	if e, ok := errors.AsType[*Error](invalid); !ok || e.Fields["reference"] != "" {
		return invalid
	}
	id, err := s.store.ReferenceHolder(ctx, merchantID, reference)
	if errors.Is(err, ErrNotFound) {
		return invalid
	}
	if err != nil {
		return err
	}
	if _, err := s.awaitPush(ctx, merchantID, id); errors.Is(err, ErrNotFound) {
		return invalid
	} else if err != nil {
		return err
	}
	return DuplicateReference(id)
}

func operatorPayment(t *Transaction) operator.Payment {
	p := operator.Payment{Ref: t.InternalRef, MerchantID: t.MerchantID, TransactionID: t.ID, Amount: t.Amount, PhoneNumber: t.PhoneNumber,
		RequestedAt: t.CreatedAt, OperatorRef: t.OperatorRef}
	if t.Description != nil {
		p.Description = *t.Description
	}
	return p
}
