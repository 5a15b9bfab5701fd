package paymenttest

import (
	"errors"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// testPushTaken: "PushTaken records that a transaction's push is no longer
// in flight, with the operator's id of it when the push returned one (kept
// as OperatorRef; "" keeps what is there), and adds step … to its
// timeline, all only when the flag was still set."
//
// The timeline is not part of payment.Store, so the step is not checked
// here (the store's TestTimeline does).
func testPushTaken(t *testing.T, s *suite) {
	ctx := t.Context()
	step := payment.TransactionEvent{Kind: payment.EventPushAccepted, At: base.Add(time.Second), Status: payment.StatusPending}

	// The flag goes, and the operator's id of the push (Airtel's
	// airtel_money_id) is kept for refunds; nothing else changes.
	t.Run("ClearsTheFlagAndKeepsTheOperatorRef", func(t *testing.T) {
		for _, c := range []struct{ name, ref string }{{"with the operator's id", "MP-72024103"}, {"without one", ""}} {
			t.Run(c.name, func(t *testing.T) {
				tr := s.create(t, s.Merchant, base)
				if err := s.Store.PushTaken(ctx, s.Merchant, tr.ID, c.ref, step); err != nil {
					t.Fatal(err)
				}
				want := *tr
				want.PushInFlight, want.OperatorRef = false, c.ref
				s.unchanged(t, &want)
			})
		}
	})

	// A second report (a duplicate or the poller judging the push taken,
	// or one after a settlement) finds the flag cleared and changes
	// nothing: neither a later operator id nor an empty one replaces the
	// one kept.
	t.Run("OnlyWhileTheFlagIsSet", func(t *testing.T) {
		for _, c := range []state{
			{"after PushTaken", func(t *testing.T, tr *payment.Transaction) *payment.Transaction { return s.taken(t, tr, "MP-FIRST") }},
			{"after Settle", func(t *testing.T, tr *payment.Transaction) *payment.Transaction {
				return s.settled(t, tr, payment.StatusSuccess, base.Add(time.Second))
			}},
		} {
			for _, later := range []struct{ name, ref string }{{"another ref", "MP-LATER"}, {"empty ref", ""}} {
				t.Run(c.name+", "+later.name, func(t *testing.T) {
					tr := c.to(t, s.create(t, s.Merchant, base))
					if tr.OperatorRef == "" {
						t.Fatal("the state under test has no operator ref to keep")
					}
					if err := s.Store.PushTaken(ctx, s.Merchant, tr.ID, later.ref, step); err != nil {
						t.Fatal(err)
					}
					s.unchanged(t, tr)
				})
			}
		}
	})

	// Another merchant's report, with this merchant's id, clears nothing:
	// the push is still in flight for its own merchant's report.
	t.Run("AnotherMerchantsIDChangesNothing", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		if err := s.Store.PushTaken(ctx, s.Other, tr.ID, "MP-OTHER", step); err != nil && !errors.Is(err, payment.ErrNotFound) {
			t.Fatalf("PushTaken as another merchant: %v, want nil or ErrNotFound", err)
		}
		s.unchanged(t, tr)
		want := *tr
		want.PushInFlight, want.OperatorRef = false, "MP-MINE"
		same(t, "its own merchant's PushTaken afterwards", s.taken(t, tr, "MP-MINE"), &want)
	})
}

// testHeard: "Heard adds an answer that changed nothing (a status poll or
// callback saying the payment is still pending) to the transaction's
// timeline."
//
// The timeline is not part of payment.Store; what is seen through it is
// that an answer heard changes nothing of the transaction, in any state.
func testHeard(t *testing.T, s *suite) {
	ctx := t.Context()
	heard := payment.TransactionEvent{Kind: payment.EventHeard, At: base.Add(2 * time.Second), Source: payment.SourcePoll,
		Status: payment.StatusPending, Detail: "TIP: transaction in progress"}

	t.Run("ChangesNothing", func(t *testing.T) {
		for _, c := range s.states() {
			t.Run(c.name, func(t *testing.T) {
				tr := c.to(t, s.create(t, s.Merchant, base))
				if err := s.Store.Heard(ctx, s.Merchant, tr.ID, heard); err != nil {
					t.Fatal(err)
				}
				s.unchanged(t, tr)
			})
		}
	})

	t.Run("AnotherMerchantsIDChangesNothing", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		if err := s.Store.Heard(ctx, s.Other, tr.ID, heard); err != nil && !errors.Is(err, payment.ErrNotFound) {
			t.Fatalf("Heard as another merchant: %v, want nil or ErrNotFound", err)
		}
		s.unchanged(t, tr)
	})
}

func quoted(s string) string { return `"` + s + `"` }
