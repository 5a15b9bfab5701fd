//go:build unix

package app

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockSQLiteServe takes the lock that makes one momopay serve per SQLite
// file: a second one, started by mistake (another terminal, a unit file
// and a shell), would run a second set of job workers and webhook senders
// against the one writer, with two sandboxes answering payers. The lock is
// flock(2) on a file beside the database ("FILE-serve.lock", 0600), which
// the kernel lets go when the process ends however it ends, so a killed
// server never blocks the next. It is not SQLite's own lock (fcntl locks,
// which closing any descriptor of the file would drop). PostgreSQL needs
// none: any number of instances serve one database. The release closes
// the file; it is left in place.
func lockSQLiteServe(dbURL string) (release func(), err error) {
	abs, ok := sqliteFile(dbURL)
	if !ok {
		return func() {}, nil // a bad URL is Open's to report
	}
	path := abs + serveLockSuffix
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil // no folder: Open says so, naming the database
	}
	if err != nil {
		return nil, fmt.Errorf("serve: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("serve: another momopay serve is already serving the SQLite database %s (it holds %s); "+
				"run one serve per SQLite file, or move to PostgreSQL for several instances", abs, path)
		}
		return nil, fmt.Errorf("serve: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// sqliteServeHeld tells config check whether a serve holds the SQLite
// file's lock now, without creating the lock file. Its probe is a shared
// lock let go at once: a serve starting in that instant would be refused,
// a window of microseconds that a person running both at once can retry.
func sqliteServeHeld(abs string) (lockFile string, held bool) {
	lockFile = abs + serveLockSuffix
	f, err := os.Open(lockFile)
	if err != nil {
		return lockFile, false // no lock file: never served, or no folder
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return lockFile, errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return lockFile, false
}
