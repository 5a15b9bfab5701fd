package payment

import (
	"context"
	"errors"
	"time"
)

// pushMargin is added to pushTimeout before a push still marked in flight
// is judged taken: it covers the database writes around the push. Past it,
// the process that sent the push has died or lost its database, and the
// push may have reached the payer, so the transaction is kept and polling
// settles it: never lose a payment that may have happened.
const pushMargin = 5 * time.Second

// pushJudgedTakenNote is the timeline's word for a push whose sender
// stopped before recording the operator's answer.
const pushJudgedTakenNote = "no answer to the push was recorded in time (its sender stopped): kept, and status polls settle it"

// pushStep is the timeline step of a push no longer in flight: accepted,
// or unconfirmed when note says why it may have gone without an answer.
func (s *Service) pushStep(note string) TransactionEvent {
	e := TransactionEvent{Kind: EventPushAccepted, At: s.now().UTC().Truncate(time.Microsecond), Status: StatusPending}
	if note != "" {
		e.Kind, e.Detail = EventPushUnconfirmed, note
	}
	return e
}

// inFlightCheck is how often a request waiting for another request's push
// looks at it again. Sandbox pushes take microseconds and real ones about a
// second, so a short interval keeps the wait close to the push itself.
const inFlightCheck = 20 * time.Millisecond

// pushJudgedTaken reports whether t's push has been in flight for longer
// than any push can last.
func (s *Service) pushJudgedTaken(t *Transaction) bool {
	return s.now().Sub(t.CreatedAt) > pushTimeout+pushMargin
}

// claimReference inserts t. When another transaction holds its reference
// and that one's push is in flight, it waits for the push: taken, it
// answers EDUPLICATE naming that transaction, which now certainly exists;
// refused (the row deleted), the reference is free again and it inserts t
// after all.
func (s *Service) claimReference(ctx context.Context, t *Transaction) error {
	giveUp := time.Now().Add(pushTimeout + pushMargin)
	for {
		err := s.insert(ctx, t)
		if dup, ok := errors.AsType[*Error](err); ok && dup.Code == EDUPLICATE {
			_, err = s.awaitPush(ctx, t.MerchantID, dup.ExistingTransactionID)
			if err == nil {
				return dup
			}
			if !errors.Is(err, ErrNotFound) {
				return err
			}
		} else if !errors.Is(err, ErrReferenceReleased) {
			return err
		}
		// The holder was refused and forgotten: the reference is free.
		// t's push has not left yet: it is stamped anew, since a push in
		// flight is judged taken by its age (pushJudgedTaken), and the
		// wait for the holder's push counted for none of it.
		s.stamp(t)
		if time.Now().After(giveUp) {
			// Request after request with this reference keeps being
			// refused; the merchant's retry will find it free.
			return &Error{Code: EUNAVAILABLE, RetryAfter: time.Second,
				Message: "another request with this reference is being refused by the operator; retry after 1 seconds with the same reference"}
		}
	}
}

// awaitPush returns the transaction once its push is no longer in flight
// (at once, with one read, when it is not), or ErrNotFound when the push
// was refused and the transaction forgotten.
// A push in flight for longer than pushTimeout and pushMargin is judged
// taken and recorded so (its sender will no longer delete it); the wait is
// bounded the same way in real time, and by ctx.
func (s *Service) awaitPush(ctx context.Context, merchantID, id string) (*Transaction, error) {
	deadline := time.Now().Add(pushTimeout + pushMargin)
	for {
		t, err := s.store.Transaction(ctx, merchantID, id)
		if err != nil || !t.PushInFlight {
			return t, err
		}
		if s.pushJudgedTaken(t) || time.Now().After(deadline) {
			if err := s.store.PushTaken(ctx, merchantID, id, "", s.pushStep(pushJudgedTakenNote)); err != nil {
				return nil, err
			}
			// Read again: the sender may have deleted it just before.
			t, err := s.store.Transaction(ctx, merchantID, id)
			if err != nil {
				return nil, err
			}
			t.PushInFlight = false
			return t, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(inFlightCheck):
		}
	}
}
