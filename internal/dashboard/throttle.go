package dashboard

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// throttle counts failed sign-ins per key (an email, or a client address)
// in token buckets: a key with no token left is refused before any
// password is compared. It is per process, as the API's rate limits are.
type throttle struct {
	every time.Duration // one token back per every
	burst int
	max   int

	mu sync.Mutex
	by map[string]*rate.Limiter
}

func newThrottle(every time.Duration, burst int) *throttle {
	return &throttle{every: every, burst: burst, max: 100_000, by: map[string]*rate.Limiter{}}
}

// wait is how long until key has an attempt again at now: 0 while it has
// one, and a key with none left is refused before any password is
// compared.
func (t *throttle) wait(key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	lim, ok := t.by[key]
	if !ok {
		return 0
	}
	if missing := 1 - lim.TokensAt(now); missing > 0 {
		return time.Duration(missing * float64(t.every))
	}
	return 0
}

// fail spends one of key's attempts.
func (t *throttle) fail(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
	lim.AllowN(now, 1)
}

// forget gives key a fresh budget: a sign-in that succeeded shows the
// failures before it were the user's own typing, not a guesser's.
func (t *throttle) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by, key)
}
