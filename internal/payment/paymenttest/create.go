package paymenttest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// testCreateTransaction: "CreateTransaction inserts t … A reference the
// merchant already used gives an *Error EDUPLICATE carrying the existing
// transaction's id; an internal_ref collision gives ErrInternalRefTaken".
//
// Not tested: ErrReferenceReleased, which needs the holder deleted between
// two statements of one create (a race no interface call can stage), and
// the jobs a create schedules, which the interface does not show.
func testCreateTransaction(t *testing.T, s *suite) {
	ctx := t.Context()

	// Every field is what the merchant and the operators are shown, so
	// each must come back exactly: the optional description (none and
	// empty are not the same), the amount's full range, and times at the
	// microsecond, read back in UTC.
	t.Run("ReadsBackEveryField", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			change func(tr *payment.Transaction)
		}{
			{"no description", func(*payment.Transaction) {}},
			{"description", func(tr *payment.Transaction) {
				d := "Facture n°42 — café, 2 × croissant"
				tr.Description = &d
			}},
			{"empty description", func(tr *payment.Transaction) { tr.Description = new(string) }},
			{"MOOV at the largest amount", func(tr *payment.Transaction) {
				tr.Operator, tr.Amount, tr.PhoneNumber = payment.OperatorMoov, payment.MaxAmount, "+23599123456"
			}},
			{"times at the microsecond", func(tr *payment.Transaction) {
				at := base.Add(time.Second + 234567*time.Microsecond)
				tr.CreatedAt, tr.UpdatedAt, tr.ExpiresAt = at, at, at.Add(90*time.Second+time.Microsecond)
			}},
			{"longest reference", func(tr *payment.Transaction) {
				tr.Reference = tr.Reference + ":" + strings.Repeat("aZ9._/-", 9)[:payment.MaxReferenceLength-len(tr.Reference)-1]
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				tr := s.pending(s.Merchant, base)
				c.change(tr)
				want := *tr
				if err := s.Store.CreateTransaction(ctx, tr); err != nil {
					t.Fatal(err)
				}
				same(t, "read back", s.read(t, s.Merchant, tr.ID), &want)
			})
		}
	})

	// The reference is the merchant's idempotency key: a second create
	// with it, whatever state its holder is in, is refused and names the
	// holder, and leaves nothing of itself.
	t.Run("DuplicateReferenceIsEDUPLICATENamingTheHolder", func(t *testing.T) {
		for _, c := range s.states() {
			t.Run("holder "+c.name, func(t *testing.T) {
				holder := c.to(t, s.create(t, s.Merchant, base))
				dup := s.pending(s.Merchant, base.Add(time.Second))
				dup.Reference = holder.Reference
				err := s.Store.CreateTransaction(ctx, dup)
				e, ok := errors.AsType[*payment.Error](err)
				if !ok || e.Code != payment.EDUPLICATE || e.ExistingTransactionID != holder.ID {
					t.Fatalf("duplicate reference: %#v (%v), want an *Error %s naming %s", e, err, payment.EDUPLICATE, holder.ID)
				}
				_, err = s.Store.Transaction(ctx, s.Merchant, dup.ID)
				notFound(t, "the refused duplicate", err)
				_, err = s.Store.TransactionByInternalRef(ctx, dup.InternalRef)
				notFound(t, "the refused duplicate's internal_ref", err)
				s.unchanged(t, holder)
			})
		}
	})

	// References are each merchant's own: another merchant's use of one
	// neither refuses nor touches this merchant's.
	t.Run("SameReferenceOfAnotherMerchantIsIndependent", func(t *testing.T) {
		mine := s.create(t, s.Merchant, base)
		theirs := s.pending(s.Other, base)
		theirs.Reference = mine.Reference
		if err := s.Store.CreateTransaction(ctx, theirs); err != nil {
			t.Fatalf("the other merchant's create with the same reference: %v", err)
		}
		s.unchanged(t, mine)
		s.unchanged(t, theirs)
		for m, want := range map[string]string{s.Merchant: mine.ID, s.Other: theirs.ID} {
			if got, err := s.Store.ReferenceHolder(ctx, m, mine.Reference); err != nil || got != want {
				t.Errorf("ReferenceHolder(%s): %q, %v; want %q", m, got, err, want)
			}
		}
	})

	// internal_refs are global (an operator's callback knows only that):
	// a collision, with any merchant's transaction, is ErrInternalRefTaken
	// and keeps nothing, so that Initiate draws again with the same
	// reference.
	t.Run("InternalRefCollisionIsErrInternalRefTaken", func(t *testing.T) {
		for _, c := range []struct{ name, merchant string }{{"same merchant", s.Merchant}, {"another merchant", s.Other}} {
			t.Run(c.name, func(t *testing.T) {
				first := s.create(t, s.Merchant, base)
				again := s.pending(c.merchant, base.Add(time.Second))
				again.InternalRef = first.InternalRef
				if err := s.Store.CreateTransaction(ctx, again); !errors.Is(err, payment.ErrInternalRefTaken) {
					t.Fatalf("internal_ref collision: %v, want ErrInternalRefTaken", err)
				}
				_, err := s.Store.Transaction(ctx, c.merchant, again.ID)
				notFound(t, "the refused create", err)
				_, err = s.Store.ReferenceHolder(ctx, c.merchant, again.Reference)
				notFound(t, "the refused create's reference", err)
				s.unchanged(t, first)

				again.InternalRef = newInternalRef()
				if err := s.Store.CreateTransaction(ctx, again); err != nil {
					t.Fatalf("the same create with a new internal_ref: %v", err)
				}
				s.unchanged(t, again)
			})
		}
	})
}

// testDeleteTransaction: "DeleteTransaction removes a PENDING transaction
// whose push is still in flight, because the operator refused it. It
// reports false when there was none (the push was meanwhile judged taken,
// or settled)."
func testDeleteTransaction(t *testing.T, s *suite) {
	ctx := t.Context()
	del := func(t *testing.T, merchant, id string) bool {
		t.Helper()
		deleted, err := s.Store.DeleteTransaction(ctx, merchant, id)
		if err != nil {
			t.Fatalf("DeleteTransaction(%s): %v", id, err)
		}
		return deleted
	}

	// A refused push leaves nothing: the transaction is gone by its id
	// and by its internal_ref.
	t.Run("DeletesWhileThePushIsInFlight", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		if !del(t, s.Merchant, tr.ID) {
			t.Fatal("a transaction in flight was not deleted")
		}
		_, err := s.Store.Transaction(ctx, s.Merchant, tr.ID)
		notFound(t, "Transaction after the delete", err)
		_, err = s.Store.TransactionByInternalRef(ctx, tr.InternalRef)
		notFound(t, "TransactionByInternalRef after the delete", err)
	})

	// The merchant may retry a refused payment with the same reference
	// (the 503 says so).
	t.Run("FreesTheReference", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		if !del(t, s.Merchant, tr.ID) {
			t.Fatal("a transaction in flight was not deleted")
		}
		_, err := s.Store.ReferenceHolder(ctx, s.Merchant, tr.Reference)
		notFound(t, "ReferenceHolder after the delete", err)
		retry := s.pending(s.Merchant, base.Add(time.Second))
		retry.Reference = tr.Reference
		if err := s.Store.CreateTransaction(ctx, retry); err != nil {
			t.Fatalf("the retry with the freed reference: %v", err)
		}
		if got, err := s.Store.ReferenceHolder(ctx, s.Merchant, tr.Reference); err != nil || got != retry.ID {
			t.Errorf("ReferenceHolder after the retry: %q, %v; want %q", got, err, retry.ID)
		}
	})

	// Once the push is no longer in flight the payment may have
	// happened: the transaction is kept, whatever the sender learns later.
	t.Run("FalseOnceThePushIsNoLongerInFlight", func(t *testing.T) {
		for _, c := range []state{
			{"push taken", func(t *testing.T, tr *payment.Transaction) *payment.Transaction { return s.taken(t, tr, "") }},
			{"settled in flight", func(t *testing.T, tr *payment.Transaction) *payment.Transaction {
				return s.settled(t, tr, payment.StatusSuccess, base.Add(time.Second))
			}},
			{"push taken, then settled", func(t *testing.T, tr *payment.Transaction) *payment.Transaction {
				return s.settled(t, s.taken(t, tr, "MP-1"), payment.StatusFailed, base.Add(time.Second))
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				tr := c.to(t, s.create(t, s.Merchant, base))
				if del(t, s.Merchant, tr.ID) {
					t.Fatal("deleted")
				}
				s.unchanged(t, tr)
			})
		}
	})

	t.Run("FalseWhenThereIsNone", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		if !del(t, s.Merchant, tr.ID) {
			t.Fatal("a transaction in flight was not deleted")
		}
		if del(t, s.Merchant, tr.ID) {
			t.Error("deleted twice")
		}
		if del(t, s.Merchant, uuid.Must(uuid.NewV7()).String()) {
			t.Error("an unknown id was deleted")
		}
	})

	// Another merchant's refusal, with this merchant's id, deletes
	// nothing: the transaction stays, in flight, holding its reference.
	t.Run("AnotherMerchantsIDDeletesNothing", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		if del(t, s.Other, tr.ID) {
			t.Fatal("another merchant deleted the transaction")
		}
		s.unchanged(t, tr)
		if got, err := s.Store.ReferenceHolder(ctx, s.Merchant, tr.Reference); err != nil || got != tr.ID {
			t.Errorf("ReferenceHolder: %q, %v; want %q", got, err, tr.ID)
		}
		if !del(t, s.Merchant, tr.ID) {
			t.Error("its own merchant could not delete it afterwards")
		}
	})
}
