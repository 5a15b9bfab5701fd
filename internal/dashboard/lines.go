package dashboard

import (
	"context"
	"sync"
)

// lines puts the sign-ins of one client address in a line of their own
// before their password is compared: an address has at most one password
// check waiting for a hashing slot (or running) at a time.
//
// Why: the process compares passwords in a few slots (store.hashing), first
// come first served. Without lines, a flood from a handful of addresses
// (each may send 30 at once before its throttle answers 429) filled that
// queue with hundreds of checks, and a correct sign-in from anywhere else
// waited behind all of them: 4.7–4.9 s with 8 flooding addresses. In its
// own line, an address holds one place in that queue, so a sign-in waits
// for about one check per address signing in at the same moment.
type lines struct {
	mu sync.Mutex
	// byKey holds the lines in use: a place, taken by sending to it
	// (capacity one), and how many sign-ins hold or wait for it. A line is
	// removed when its last one leaves, so the map holds only the
	// addresses with a sign-in in progress.
	byKey map[string]*line
}

type line struct {
	place chan struct{}
	users int
}

// wait returns once key's line is free for the caller, or with ctx's
// error when ctx ends first. On success, done must be called when the
// check is over.
func (l *lines) wait(ctx context.Context, key string) (done func(), err error) {
	l.mu.Lock()
	if l.byKey == nil {
		l.byKey = map[string]*line{}
	}
	ln := l.byKey[key]
	if ln == nil {
		ln = &line{place: make(chan struct{}, 1)}
		l.byKey[key] = ln
	}
	ln.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if ln.users--; ln.users == 0 {
			delete(l.byKey, key)
		}
		l.mu.Unlock()
	}
	select {
	case ln.place <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
	return func() { <-ln.place; leave() }, nil
}
