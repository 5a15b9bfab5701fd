// Package store is momopay's SQL persistence on SQLite (embedded, the
// zero-set-up default) and PostgreSQL (production). One set of SQL serves
// both engines: both bind $1, $2 by position and both have RETURNING and
// ON CONFLICT; only the DDL differs, one migration folder per dialect.
//
// It owns the merchants, api_keys, transactions and reconciliation_cases
// tables. It holds no business rules: payment decides, store records.
package store
