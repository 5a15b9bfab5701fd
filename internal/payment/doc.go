// Package payment is the domain of momopay: what a transaction is, which
// inputs are acceptable, which state changes are allowed, and the Service that
// initiates and settles payments.
//
// It must not import net/http or database/sql: handlers translate HTTP into
// calls on Service, and the store implements the Store interface declared
// here, so the rules of the contract live in one place and are tested without
// a server.
package payment
