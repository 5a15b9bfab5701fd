//go:build !unix

package app

// lockSQLiteServe takes no lock where flock(2) is missing: the docs' "one
// serve per SQLite file" is then the operator's to keep.
func lockSQLiteServe(string) (func(), error) { return func() {}, nil }

// sqliteServeHeld cannot tell without flock(2): it says no.
func sqliteServeHeld(abs string) (string, bool) { return abs + serveLockSuffix, false }
