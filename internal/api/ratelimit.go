package api

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit is the sustained rate and burst allowed per merchant. Limits are
// per process: with N instances behind a balancer a merchant gets up to N
// times this, which is what a guard against runaway clients needs.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// DefaultRateLimit is generous for a merchant's server and stops loops.
var DefaultRateLimit = RateLimit{PerSecond: 50, Burst: 100}

type limiter struct {
	cfg RateLimit
	mu  sync.Mutex
	by  map[string]*rate.Limiter
}

func newLimiter(cfg RateLimit) *limiter {
	return &limiter{cfg: cfg, by: map[string]*rate.Limiter{}}
}

// allow takes one token for merchant; when none is left it returns how long
// until one is.
func (l *limiter) allow(merchant string, now time.Time) (time.Duration, bool) {
	if l.cfg.PerSecond <= 0 {
		return 0, true
	}
	l.mu.Lock()
	lim, ok := l.by[merchant]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(l.cfg.PerSecond), l.cfg.Burst)
		l.by[merchant] = lim
	}
	l.mu.Unlock()
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}
