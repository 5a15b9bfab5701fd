package store

import (
	"context"
	"runtime"

	"golang.org/x/crypto/bcrypt"
)

// hashSlots bounds the bcrypt hashes and comparisons running at once in
// the process to half its cores, at least one. Each costs tens of
// milliseconds of CPU by design: without a bound, a flood of sign-ins (an
// address may try 30 at once, and a botnet has many addresses) or of
// password changes could take every core, and every merchant's API calls
// would wait behind it. Past the bound, a check waits its turn for as long
// as its context allows: a dashboard request's budget (then 503, as for a
// database that does not answer in time), a command's whole run.
var hashSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))

// hashing runs fn, a bcrypt hash or comparison, in one of hashSlots.
func hashing(ctx context.Context, fn func()) error {
	select {
	case hashSlots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-hashSlots }()
	fn()
	return nil
}

// hashPassword is bcrypt's hash of password, at PasswordCost, in a slot.
func hashPassword(ctx context.Context, password string) (hash []byte, err error) {
	if werr := hashing(ctx, func() { hash, err = bcrypt.GenerateFromPassword([]byte(password), PasswordCost) }); werr != nil {
		return nil, werr
	}
	return hash, err
}

// passwordMatches compares password with a bcrypt hash, in a slot.
func passwordMatches(ctx context.Context, hash []byte, password string) (ok bool, err error) {
	err = hashing(ctx, func() { ok = bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil })
	return ok, err
}
