package store

import (
	"context"
	"runtime"
	"slices"
	"sync"

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
var hashSlots = newHashGate(max(1, runtime.GOMAXPROCS(0)/2))

// hashGate hands out the hashing slots in the order they were asked for,
// except that checks marked as from a known device (a browser that signed
// in to the account before: CheckPassword's knownDevice) go ahead of the
// others, one for each other check served while both kinds wait. So a
// flood of sign-ins from browsers that never signed in (guessing, or
// stuffing leaked passwords) does not keep a returning user waiting, and a
// flood of known-device sign-ins (an attacker's own account, which can
// have those) cannot hold back the others for long either.
type hashGate struct {
	slots int // how many checks run at once
	mu    sync.Mutex
	free  int
	// waiting holds the checks waiting for a slot, oldest first: [0] the
	// others, [1] those from known devices.
	waiting [2][]chan struct{}
	// knownLast: the last slot handed to a waiter went to a known device,
	// so the next goes to another check if one waits.
	knownLast bool
}

func newHashGate(slots int) *hashGate { return &hashGate{slots: slots, free: slots} }

// acquire returns once the caller holds a slot, or with ctx's error when
// ctx ends first (holding none).
func (g *hashGate) acquire(ctx context.Context, knownDevice bool) error {
	kind := 0
	if knownDevice {
		kind = 1
	}
	g.mu.Lock()
	if g.free > 0 && len(g.waiting[0])+len(g.waiting[1]) == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	g.waiting[kind] = append(g.waiting[kind], turn)
	g.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		i := slices.Index(g.waiting[kind], turn)
		if i >= 0 {
			g.waiting[kind] = slices.Delete(g.waiting[kind], i, i+1)
		}
		g.mu.Unlock()
		if i < 0 { // handed a slot meanwhile: pass it on
			g.release()
		}
		return ctx.Err()
	}
}

// release gives the caller's slot to the next waiter, or back.
func (g *hashGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	kind := 0
	switch {
	case len(g.waiting[1]) > 0 && (len(g.waiting[0]) == 0 || !g.knownLast):
		kind = 1
	case len(g.waiting[0]) == 0:
		g.free++
		return
	}
	turn := g.waiting[kind][0]
	g.waiting[kind] = g.waiting[kind][1:]
	g.knownLast = kind == 1
	close(turn)
}

// hashing runs fn, a bcrypt hash or comparison, in one of hashSlots.
func hashing(ctx context.Context, knownDevice bool, fn func()) error {
	if err := hashSlots.acquire(ctx, knownDevice); err != nil {
		return err
	}
	defer hashSlots.release()
	fn()
	return nil
}

// hashPassword is bcrypt's hash of password, at PasswordCost, in a slot.
func hashPassword(ctx context.Context, password string) (hash []byte, err error) {
	if werr := hashing(ctx, false, func() { hash, err = bcrypt.GenerateFromPassword([]byte(password), PasswordCost) }); werr != nil {
		return nil, werr
	}
	return hash, err
}

// passwordMatches compares password with a bcrypt hash, in a slot.
func passwordMatches(ctx context.Context, knownDevice bool, hash []byte, password string) (ok bool, err error) {
	err = hashing(ctx, knownDevice, func() { ok = bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil })
	return ok, err
}
