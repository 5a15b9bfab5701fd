// Package paymenttest is the conformance suite of payment.Store, in the
// manner of River's riverdrivertest: one set of tests, written against the
// interface alone, that every implementation runs through its own test
// (internal/store runs it on SQLite always and on PostgreSQL when it is
// there). Each clause of the doc comments on payment.Store becomes a named
// subtest, so that a store that breaks a clause fails by that clause's
// name, and so that the interface's documentation and what is tested of
// it cannot drift apart unnoticed.
//
// It is for tests only: it imports package testing, and nothing outside a
// _test.go file may import it.
//
// It must not import internal/store, database/sql or net/http. The suite
// speaks only the domain's language (payment.Store and its types), so that
// the domain stays free of SQL and of transport, and any implementation
// can be held to the same clauses (deps_test.go checks this). What a store
// keeps beyond the interface (a timeline, reconciliation cases, jobs,
// totals) is therefore not seen here; the store's own tests cover it.
package paymenttest
