package paymenttest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// testSettle: "Settle moves a PENDING transaction to a final state with
// one conditional update (which never sets EXPIRED before expires_at: an
// early EXPIRED changes nothing and reports false) … When the transaction
// is already final and the outcome differs, it records a
// ReconciliationCase instead. It reports whether this call made the
// transition."
//
// Reconciliation cases and webhook deliveries are not part of
// payment.Store, so what is checked of a late outcome is that it changes
// nothing and reports false, with Reconcile set or not (the store's
// TestTimeline and TestReconciliationCases check the case).
func testSettle(t *testing.T, s *suite) {
	ctx := t.Context()
	// moved is tr after st made its transition: the outcome and what the
	// operator said are kept, updated_at is the outcome's time, and the
	// push is certainly no longer in flight.
	moved := func(tr *payment.Transaction, st payment.Settlement) *payment.Transaction {
		want := *tr
		want.Status, want.UpdatedAt, want.PushInFlight = st.To, st.At, false
		want.OperatorCode, want.FailureReason = st.OperatorCode, st.FailureReason
		if st.OperatorRef != "" {
			want.OperatorRef = st.OperatorRef
		}
		return &want
	}
	fromStates := []state{s.states()[0], s.states()[1]} // PENDING: in flight, push taken

	t.Run("MovesAPendingTransactionOnceReportingTrue", func(t *testing.T) {
		for _, from := range fromStates {
			for _, to := range []payment.Status{payment.StatusSuccess, payment.StatusFailed, payment.StatusTimeout} {
				t.Run(fmt.Sprintf("%s to %s", from.name, to), func(t *testing.T) {
					tr := from.to(t, s.create(t, s.Merchant, base))
					st := settlement(tr, to, base.Add(time.Minute+time.Microsecond))
					got, changed := s.settle(t, st)
					if !changed {
						t.Error("reported false")
					}
					want := moved(tr, st)
					same(t, "returned", got, want)
					s.unchanged(t, want)
				})
			}
		}
	})

	// An outcome that carries no operator id keeps the one the push
	// returned: a refund needs it.
	t.Run("KeepsThePushsOperatorRefWhenTheOutcomeHasNone", func(t *testing.T) {
		tr := s.taken(t, s.create(t, s.Merchant, base), "MP-PUSH")
		st := settlement(tr, payment.StatusSuccess, base.Add(time.Minute))
		st.OperatorRef = ""
		got, changed := s.settle(t, st)
		if !changed || got.OperatorRef != "MP-PUSH" {
			t.Errorf("changed %v, OperatorRef %q; want true and %q", changed, got.OperatorRef, "MP-PUSH")
		}
		s.unchanged(t, got)
	})

	// The same outcome heard again (a callback and a poll) reports false
	// and changes nothing, not even what the operator said the second time.
	t.Run("SameOutcomeAgainReportsFalseAndChangesNothing", func(t *testing.T) {
		for _, to := range []payment.Status{payment.StatusSuccess, payment.StatusFailed, payment.StatusTimeout, payment.StatusExpired} {
			t.Run(string(to), func(t *testing.T) {
				first := s.settledAt(t, s.create(t, s.Merchant, base), to)
				again := settlement(first, to, first.UpdatedAt.Add(time.Minute))
				again.OperatorRef, again.OperatorCode, again.Detail = "MP-AGAIN", "C_AGAIN", "heard again"
				got, changed := s.settle(t, again)
				if changed {
					t.Error("reported true")
				}
				same(t, "returned", got, first)
				s.unchanged(t, first)
			})
		}
	})

	// A final state is final (contract §3): a contrary outcome heard
	// after it, whether or not it asks for reconciliation, reports false
	// and changes nothing. (The first outcome carries an operator id:
	// internal/store fills a missing one in from a late SUCCESS, which a
	// refund needs; payment.Store's doc does not say so, and it is left
	// to the store's own tests.)
	t.Run("ContraryLateOutcomeChangesNothing", func(t *testing.T) {
		for _, c := range []struct{ final, late payment.Status }{
			{payment.StatusSuccess, payment.StatusFailed},
			{payment.StatusFailed, payment.StatusSuccess},
			{payment.StatusTimeout, payment.StatusSuccess},
			{payment.StatusExpired, payment.StatusSuccess},
			{payment.StatusSuccess, payment.StatusTimeout},
		} {
			for _, reconcile := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s then %s, reconcile %v", c.final, c.late, reconcile), func(t *testing.T) {
					first := s.settledAt(t, s.create(t, s.Merchant, base), c.final)
					late := settlement(first, c.late, first.UpdatedAt.Add(time.Hour))
					late.OperatorRef, late.Reconcile = "MP-LATE", reconcile
					got, changed := s.settle(t, late)
					if changed {
						t.Error("reported true")
					}
					same(t, "returned", got, first)
					s.unchanged(t, first)
				})
			}
		}
	})

	// EXPIRED is believed only from expires_at on: an earlier one, from
	// any source, changes nothing (the push stays in flight if it was)
	// and reports false, returning the transaction still PENDING.
	t.Run("ExpiredBeforeExpiresAtChangesNothing", func(t *testing.T) {
		for _, from := range fromStates {
			for _, early := range []time.Duration{55 * time.Second, time.Microsecond} {
				t.Run(fmt.Sprintf("%s, %s early", from.name, early), func(t *testing.T) {
					tr := from.to(t, s.create(t, s.Merchant, base))
					for _, source := range []string{payment.SourcePoll, payment.SourceCallback, payment.SourceExpiry} {
						st := settlement(tr, payment.StatusExpired, tr.ExpiresAt.Add(-early))
						st.Source = source
						got, changed := s.settle(t, st)
						if changed {
							t.Errorf("%s: reported true", source)
						}
						same(t, source+": returned", got, tr)
					}
					s.unchanged(t, tr)
				})
			}
		}
	})

	t.Run("ExpiredFromExpiresAtMoves", func(t *testing.T) {
		for _, late := range []time.Duration{0, time.Microsecond, time.Hour} {
			t.Run(fmt.Sprintf("%s after", late), func(t *testing.T) {
				tr := s.taken(t, s.create(t, s.Merchant, base), "")
				st := settlement(tr, payment.StatusExpired, tr.ExpiresAt.Add(late))
				got, changed := s.settle(t, st)
				if !changed {
					t.Error("reported false")
				}
				want := moved(tr, st)
				same(t, "returned", got, want)
				s.unchanged(t, want)
			})
		}
	})

	// A settlement names its merchant: with another merchant's, or an id
	// nobody has, it changes nothing. It is ErrNotFound, as Transaction
	// answers: Service.settle reads the returned transaction whenever
	// there is no error, so "no transaction" must be an error.
	t.Run("UnknownOrAnotherMerchantsIDIsErrNotFoundAndChangesNothing", func(t *testing.T) {
		tr := s.create(t, s.Merchant, base)
		for _, c := range []struct{ name, merchant, id string }{
			{"another merchant's", s.Other, tr.ID},
			{"unknown", s.Merchant, uuid.Must(uuid.NewV7()).String()},
		} {
			t.Run(c.name, func(t *testing.T) {
				st := settlement(tr, payment.StatusSuccess, base.Add(time.Minute))
				st.MerchantID, st.TransactionID = c.merchant, c.id
				_, changed, err := s.Store.Settle(ctx, st)
				if changed || !errors.Is(err, payment.ErrNotFound) {
					t.Errorf("changed %v, error %v; want false and ErrNotFound", changed, err)
				}
				s.unchanged(t, tr)
			})
		}
	})
}

// settledAt settles a transaction just created to the final status to at
// the first time it may: EXPIRED at expires_at, any other a minute in.
func (s *suite) settledAt(t *testing.T, tr *payment.Transaction, to payment.Status) *payment.Transaction {
	t.Helper()
	at := base.Add(time.Minute)
	if to == payment.StatusExpired {
		at = tr.ExpiresAt
	}
	return s.settled(t, tr, to, at)
}
