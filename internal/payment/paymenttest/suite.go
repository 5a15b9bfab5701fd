package paymenttest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// Fixture is one store under test and two of its merchants.
type Fixture struct {
	// Store is the implementation under test.
	Store payment.Store
	// Merchant and Other are the ids of two merchants that exist in
	// Store and have no transactions yet. The suite writes as Merchant
	// and checks, through Other, that every read and write is scoped to
	// its merchant: Other reads, lists, changes and deletes none of
	// Merchant's transactions, and its own reference space is separate.
	Merchant, Other string
}

// RunStore runs the conformance suite of payment.Store: one subtest for
// each method, and within it one for each clause of that method's doc
// comment.
//
// open is called once for the clauses of every method but
// ListTransactions, which share its fixture (their transactions never
// meet: each has a reference and an internal_ref of its own), and once
// for each clause of ListTransactions, whose assertions cover a merchant's
// whole history. Fixtures may share one database: internal_refs, which are
// global, are drawn at random.
//
// Every time the suite writes is base or a fixed offset of it, in UTC at
// microsecond precision, as the service makes them (Service.stamp).
func RunStore(t *testing.T, open func(t *testing.T) Fixture) {
	t.Helper()
	refs := new(atomic.Int64)
	start := func(t *testing.T) *suite {
		t.Helper()
		f := open(t)
		if f.Store == nil || f.Merchant == "" || f.Other == "" || f.Merchant == f.Other {
			t.Fatalf("open gave an unusable fixture: store %v, merchants %q and %q", f.Store, f.Merchant, f.Other)
		}
		return &suite{Fixture: f, refs: refs}
	}
	s := start(t)
	for _, method := range []struct {
		name string
		run  func(t *testing.T, s *suite)
	}{
		{"CreateTransaction", testCreateTransaction},
		{"DeleteTransaction", testDeleteTransaction},
		{"PushTaken", testPushTaken},
		{"Heard", testHeard},
		{"Transaction", testTransaction},
		{"ReferenceHolder", testReferenceHolder},
		{"TransactionByInternalRef", testTransactionByInternalRef},
		{"ListTransactions", func(t *testing.T, _ *suite) { testListTransactions(t, start) }},
		{"Settle", testSettle},
		{"MerchantIDsThatAreNoIDs", testNoMerchant},
	} {
		t.Run(method.name, func(t *testing.T) { method.run(t, s) })
	}
}

// base is the instant the suite's transactions are made around: a fixed
// time, so that a failure reads the same on every run.
var base = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// suite is a Fixture with the suite's few ways of making and reading
// transactions through the store under test.
type suite struct {
	Fixture
	refs *atomic.Int64 // references drawn, for unique ones
}

// pending returns a new transaction of merchant as Initiate makes it:
// PENDING, its push in flight, created at at and expiring
// DefaultPendingTTL later, with an id, a reference and an internal_ref used
// nowhere else. It is not stored.
func (s *suite) pending(merchant string, at time.Time) *payment.Transaction {
	return &payment.Transaction{
		ID:          uuid.Must(uuid.NewV7()).String(),
		MerchantID:  merchant,
		Reference:   fmt.Sprintf("conformance-%d", s.refs.Add(1)),
		InternalRef: newInternalRef(),
		Amount:      1500,
		Currency:    payment.Currency,
		Operator:    payment.OperatorAirtel,
		PhoneNumber: "+23566000000",
		Status:      payment.StatusPending,
		CreatedAt:   at,
		UpdatedAt:   at,
		ExpiresAt:   at.Add(payment.DefaultPendingTTL),
		// The operator's fields are empty, as they are at every create:
		// what the operator says comes later, with PushTaken and Settle.
		PushInFlight: true,
	}
}

// newInternalRef draws an internal_ref of the operators' form (SERVICE-
// and 8 of A–Z, 0–9; rand.Text uses A–Z and 2–7): unique, since
// internal_refs are global and the fixtures may share a database.
func newInternalRef() string { return "SERVICE-" + rand.Text()[:8] }

// create stores a new pending transaction of merchant created at at, and
// returns it as stored.
func (s *suite) create(t *testing.T, merchant string, at time.Time) *payment.Transaction {
	t.Helper()
	tr := s.pending(merchant, at)
	if err := s.Store.CreateTransaction(t.Context(), tr); err != nil {
		t.Fatalf("CreateTransaction(%s): %v", tr.Reference, err)
	}
	return tr
}

// taken records tr's push as taken with operatorRef, and returns tr as it
// now is.
func (s *suite) taken(t *testing.T, tr *payment.Transaction, operatorRef string) *payment.Transaction {
	t.Helper()
	step := payment.TransactionEvent{Kind: payment.EventPushAccepted, At: tr.CreatedAt.Add(time.Second), Status: payment.StatusPending}
	if err := s.Store.PushTaken(t.Context(), tr.MerchantID, tr.ID, operatorRef, step); err != nil {
		t.Fatalf("PushTaken(%s): %v", tr.Reference, err)
	}
	return s.read(t, tr.MerchantID, tr.ID)
}

// settlement is a settlement of tr to status to at at, carrying an
// outcome an operator could have given.
func settlement(tr *payment.Transaction, to payment.Status, at time.Time) payment.Settlement {
	st := payment.Settlement{
		MerchantID: tr.MerchantID, TransactionID: tr.ID, To: to, At: at,
		Source: payment.SourceCallback, Detail: "conformance " + string(to),
		OperatorRef: "MP-" + tr.ID[:8], OperatorCode: "C_" + string(to), Reconcile: true,
	}
	if to == payment.StatusFailed {
		st.FailureReason = "insufficient_balance"
	}
	return st
}

// settle applies st, which must not fail, and returns Settle's answer.
func (s *suite) settle(t *testing.T, st payment.Settlement) (*payment.Transaction, bool) {
	t.Helper()
	got, changed, err := s.Store.Settle(t.Context(), st)
	if err != nil {
		t.Fatalf("Settle(%s to %s at %s): %v", st.TransactionID, st.To, st.At.Format(time.RFC3339Nano), err)
	}
	if got == nil {
		t.Fatalf("Settle(%s to %s) returned no transaction", st.TransactionID, st.To)
	}
	return got, changed
}

// settled settles tr to to at at (which must make the transition) and
// returns it as it now is.
func (s *suite) settled(t *testing.T, tr *payment.Transaction, to payment.Status, at time.Time) *payment.Transaction {
	t.Helper()
	if _, changed := s.settle(t, settlement(tr, to, at)); !changed {
		t.Fatalf("Settle(%s to %s) made no transition", tr.Reference, to)
	}
	return s.read(t, tr.MerchantID, tr.ID)
}

// state takes a transaction just created (PENDING, its push in flight)
// to one of the states a clause is checked in, and returns it as stored.
type state struct {
	name string
	to   func(t *testing.T, tr *payment.Transaction) *payment.Transaction
}

// states are the states every method that finds a transaction must find
// it in: PENDING with its push in flight, PENDING with its push taken, and
// settled.
func (s *suite) states() []state {
	return []state{
		{"in flight", func(_ *testing.T, tr *payment.Transaction) *payment.Transaction { return tr }},
		{"push taken", func(t *testing.T, tr *payment.Transaction) *payment.Transaction { return s.taken(t, tr, "MP-1") }},
		{"settled", func(t *testing.T, tr *payment.Transaction) *payment.Transaction {
			return s.settled(t, tr, payment.StatusSuccess, base.Add(time.Minute))
		}},
	}
}

// read returns the merchant's transaction id, which must exist.
func (s *suite) read(t *testing.T, merchant, id string) *payment.Transaction {
	t.Helper()
	got, err := s.Store.Transaction(t.Context(), merchant, id)
	if err != nil {
		t.Fatalf("Transaction(%s): %v", id, err)
	}
	return got
}

// unchanged checks that the merchant's transaction is still want, field
// for field.
func (s *suite) unchanged(t *testing.T, want *payment.Transaction) {
	t.Helper()
	same(t, "the transaction", s.read(t, want.MerchantID, want.ID), want)
}

// notFound checks that err is ErrNotFound.
func notFound(t *testing.T, call string, err error) {
	t.Helper()
	if !errors.Is(err, payment.ErrNotFound) {
		t.Errorf("%s: error %v, want ErrNotFound", call, err)
	}
}

// same reports each field in which got differs from want. Times must be
// the same instant and in UTC, as the service writes them and the API
// shows them.
func same(t *testing.T, what string, got, want *payment.Transaction) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil, want %+v", what, want)
		return
	}
	for _, d := range diff(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func diff(got, want *payment.Transaction) []string {
	var out []string
	field := func(name string, g, w any) {
		if g != w {
			out = append(out, fmt.Sprintf("%s = %#v, want %#v", name, g, w))
		}
	}
	instant := func(name string, g, w time.Time) {
		if !g.Equal(w) || g.Location() != time.UTC {
			out = append(out, fmt.Sprintf("%s = %s, want %s in UTC", name, g.Format(time.RFC3339Nano), w.Format(time.RFC3339Nano)))
		}
	}
	field("ID", got.ID, want.ID)
	field("MerchantID", got.MerchantID, want.MerchantID)
	field("Reference", got.Reference, want.Reference)
	field("InternalRef", got.InternalRef, want.InternalRef)
	field("Amount", got.Amount, want.Amount)
	field("Currency", got.Currency, want.Currency)
	field("Operator", got.Operator, want.Operator)
	field("PhoneNumber", got.PhoneNumber, want.PhoneNumber)
	switch {
	case (got.Description == nil) != (want.Description == nil):
		out = append(out, fmt.Sprintf("Description = %v, want %v", describe(got.Description), describe(want.Description)))
	case got.Description != nil && *got.Description != *want.Description:
		out = append(out, fmt.Sprintf("Description = %q, want %q", *got.Description, *want.Description))
	}
	field("Status", got.Status, want.Status)
	instant("CreatedAt", got.CreatedAt, want.CreatedAt)
	instant("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	instant("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	field("PushInFlight", got.PushInFlight, want.PushInFlight)
	field("OperatorRef", got.OperatorRef, want.OperatorRef)
	field("OperatorCode", got.OperatorCode, want.OperatorCode)
	field("FailureReason", got.FailureReason, want.FailureReason)
	return out
}

func describe(s *string) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *s)
}
