package paymenttest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// testTransaction: "Transaction returns the merchant's transaction or
// ErrNotFound." (Reading back what was written is CreateTransaction's
// ReadsBackEveryField.)
func testTransaction(t *testing.T, s *suite) {
	ctx := t.Context()

	// Ids are the service's canonical strings (payment.ValidID): any other
	// string, other spellings of an existing id's UUID included, names no
	// transaction, and is answered ErrNotFound rather than another error.
	t.Run("UnknownIDIsErrNotFound", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		for _, c := range []struct{ name, id string }{
			{"an id never used", uuid.Must(uuid.NewV7()).String()},
			{"empty", ""},
			{"not a UUID", "not-an-id"},
			{"upper case", strings.ToUpper(tr.ID)},
			{"braced", "{" + tr.ID + "}"},
			{"urn", "urn:uuid:" + tr.ID},
			{"without dashes", strings.ReplaceAll(tr.ID, "-", "")},
		} {
			t.Run(c.name, func(t *testing.T) {
				got, err := s.Store.Transaction(ctx, s.Merchant, c.id)
				notFound(t, "Transaction("+quoted(c.id)+")", err)
				if got != nil {
					t.Errorf("Transaction(%q) returned %+v", c.id, got)
				}
			})
		}
	})

	t.Run("AnotherMerchantsIDIsErrNotFound", func(t *testing.T) {
		mine, theirs := s.create(t, s.Merchant, base), s.create(t, s.Other, base)
		for _, c := range []struct{ name, merchant, id string }{
			{"mine as the other", s.Other, mine.ID},
			{"theirs as me", s.Merchant, theirs.ID},
		} {
			t.Run(c.name, func(t *testing.T) {
				got, err := s.Store.Transaction(ctx, c.merchant, c.id)
				notFound(t, "Transaction", err)
				if got != nil {
					t.Errorf("Transaction returned %+v", got)
				}
			})
		}
	})
}

// testReferenceHolder: "ReferenceHolder returns the id of the merchant's
// transaction holding reference (its push in flight or not), or
// ErrNotFound." (A reference freed by a delete is DeleteTransaction's
// FreesTheReference.)
func testReferenceHolder(t *testing.T, s *suite) {
	ctx := t.Context()

	t.Run("NamesTheHolderInFlightOrNot", func(t *testing.T) {
		for _, c := range s.states() {
			t.Run(c.name, func(t *testing.T) {
				tr := c.to(t, s.create(t, s.Merchant, base))
				if got, err := s.Store.ReferenceHolder(ctx, s.Merchant, tr.Reference); err != nil || got != tr.ID {
					t.Errorf("ReferenceHolder: %q, %v; want %q", got, err, tr.ID)
				}
			})
		}
	})

	// A reference nobody holds, or one that is no reference at all (the
	// create's validation asks before it rejects the request), is
	// ErrNotFound rather than another error.
	t.Run("FreeReferenceIsErrNotFound", func(t *testing.T) {
		s.create(t, s.Merchant, base) // a merchant with a history
		for _, c := range []struct{ name, ref string }{
			{"never used", s.pending(s.Merchant, base).Reference},
			{"empty", ""},
			{"not a reference", "order 1\x00é"},
			{"too long", strings.Repeat("a", payment.MaxReferenceLength+1)},
		} {
			t.Run(c.name, func(t *testing.T) {
				got, err := s.Store.ReferenceHolder(ctx, s.Merchant, c.ref)
				notFound(t, "ReferenceHolder("+quoted(c.ref)+")", err)
				if got != "" {
					t.Errorf("ReferenceHolder(%q) named %q", c.ref, got)
				}
			})
		}
	})

	t.Run("AnotherMerchantsReferenceIsErrNotFound", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		got, err := s.Store.ReferenceHolder(ctx, s.Other, tr.Reference)
		notFound(t, "ReferenceHolder as another merchant", err)
		if got != "" {
			t.Errorf("another merchant was told the holder %q", got)
		}
	})
}

// testTransactionByInternalRef: "TransactionByInternalRef finds a
// transaction for an operator callback, which knows only our
// internal_ref." A callback may come before the push's own answer, so a
// transaction is found in flight too; and since it names no merchant,
// every merchant's transaction is found.
func testTransactionByInternalRef(t *testing.T, s *suite) {
	ctx := t.Context()

	t.Run("FindsAnyMerchantsTransactionInAnyState", func(t *testing.T) {
		for _, c := range s.states() {
			for _, m := range []struct{ name, id string }{{"merchant", s.Merchant}, {"other merchant", s.Other}} {
				t.Run(c.name+", "+m.name, func(t *testing.T) {
					tr := c.to(t, s.create(t, m.id, base))
					got, err := s.Store.TransactionByInternalRef(ctx, tr.InternalRef)
					if err != nil {
						t.Fatal(err)
					}
					same(t, "found", got, tr)
				})
			}
		}
	})

	// internal_refs are compared exactly: other spellings, and strings
	// that are no internal_ref, are ErrNotFound rather than another error.
	t.Run("UnknownIsErrNotFound", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		for _, c := range []struct{ name, ref string }{
			{"never drawn", newInternalRef()},
			{"empty", ""},
			{"lower case", strings.ToLower(tr.InternalRef)},
			{"longer", tr.InternalRef + "A"},
			{"prefix alone", "SERVICE-"},
			{"not text", "SERVICE-\x00\xff"},
		} {
			t.Run(c.name, func(t *testing.T) {
				got, err := s.Store.TransactionByInternalRef(ctx, c.ref)
				notFound(t, "TransactionByInternalRef("+quoted(c.ref)+")", err)
				if got != nil {
					t.Errorf("TransactionByInternalRef(%q) returned %+v", c.ref, got)
				}
			})
		}
	})
}

// testNoMerchant: a merchant id that is no id (empty, not a UUID) names
// no merchant, so every call finds nothing and changes nothing, on every
// engine, as another merchant's id does; it is no error of the store's
// (PostgreSQL, which types the column, refused such an id with an error
// before the store checked it).
func testNoMerchant(t *testing.T, s *suite) {
	ctx := t.Context()
	mine := s.create(t, s.Merchant, base)
	for _, merchant := range []string{"", "not-a-uuid", "ABC"} {
		t.Run(fmt.Sprintf("%q", merchant), func(t *testing.T) {
			if got, err := s.Store.Transaction(ctx, merchant, mine.ID); got != nil || !errors.Is(err, payment.ErrNotFound) {
				t.Errorf("Transaction: %+v, %v; want ErrNotFound", got, err)
			}
			if deleted, err := s.Store.DeleteTransaction(ctx, merchant, mine.ID); deleted || err != nil {
				t.Errorf("DeleteTransaction: %v, %v; want false, nil", deleted, err)
			}
			step := payment.TransactionEvent{Kind: payment.EventPushAccepted, At: base, Status: payment.StatusPending}
			if err := s.Store.PushTaken(ctx, merchant, mine.ID, "MP-NONE", step); err != nil && !errors.Is(err, payment.ErrNotFound) {
				t.Errorf("PushTaken: %v, want nil or ErrNotFound", err)
			}
			if err := s.Store.Heard(ctx, merchant, mine.ID, step); err != nil && !errors.Is(err, payment.ErrNotFound) {
				t.Errorf("Heard: %v, want nil or ErrNotFound", err)
			}
			if page, err := s.Store.ListTransactions(ctx, merchant, payment.ListFilter{Page: 1, PerPage: 20}); err != nil || page.Total != 0 || len(page.Transactions) != 0 {
				t.Errorf("ListTransactions: %+v, %v; want an empty page", page, err)
			}
			st := settlement(mine, payment.StatusSuccess, base.Add(time.Minute))
			st.MerchantID = merchant
			if got, changed, err := s.Store.Settle(ctx, st); got != nil || changed || !errors.Is(err, payment.ErrNotFound) {
				t.Errorf("Settle: %+v, %v, %v; want ErrNotFound", got, changed, err)
			}
			s.unchanged(t, mine)
		})
	}
}
