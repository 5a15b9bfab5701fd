package dashboard

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// throttle counts sign-in attempts per key (an email, or a client address)
// in token buckets: each attempt spends a token before its password is
// compared, one that succeeds gives it back, and a key with no token left
// is refused. It is per process, as the API's rate limits are.
type throttle struct {
	every time.Duration // one token back per every
	burst int
	max   int

	mu sync.Mutex
	by map[string]*rate.Limiter
	// latest is the latest time a bucket was given: a caller whose clock
	// reading was overtaken by another's while it waited for mu uses it
	// instead, since a bucket given an earlier time than its last one
	// counts that time's refill twice.
	latest time.Time
}

func newThrottle(every time.Duration, burst int) *throttle {
	return &throttle{every: every, burst: burst, max: 100_000, by: map[string]*rate.Limiter{}}
}

// take spends one of key's attempts at now, before the password is
// compared: attempts sent at once then cannot all pass a check made before
// any of them failed. When key has none left it spends nothing and says
// how long until it has one again. giveBack returns the attempt, for a
// sign-in that succeeded or could not be judged.
func (t *throttle) take(key string, now time.Time) (wait time.Duration, giveBack func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.latest) {
		now = t.latest
	}
	t.latest = now
	lim, ok := t.by[key]
	if !ok {
		if len(t.by) >= t.max {
			// A full bucket is the same as none: drop those first, then
			// anything, which at worst gives one key a fresh burst.
			for k, l := range t.by {
				if l.TokensAt(now) >= float64(t.burst) || len(t.by) >= t.max {
					delete(t.by, k)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(t.every), t.burst)
		t.by[key] = lim
	}
	r := lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait, nil
	}
	// Cancelled as of the moment it was taken (a later moment would be
	// too late for rate to restore it), the bucket counts again the refill
	// of the time the password took to compare: a few hundredths of an
	// attempt.
	return 0, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		r.CancelAt(now)
	}
}

// forget gives key a fresh budget: a sign-in that succeeded shows the
// failures before it were the user's own typing, not a guesser's.
func (t *throttle) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by, key)
}
